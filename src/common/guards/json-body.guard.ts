import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { GATEWAY_CONFIG } from '../../config/config.tokens';
import { GatewayConfig } from '../../config/gateway-config.schema';
import { INVALID_BODY_CODE } from '../decorators/invalid-body-code.decorator';
import { ErrorCode, GatewayError } from '../errors';
import { GatewayRequest } from '../http/gateway-request';
import { checkJsonShape } from '../json/json-shape';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Reads and parses a route's JSON body. Listed last in a route's guards, so that authentication,
 * burst and entitlement checks come before any body is read (DESIGN.md section 5); a guard rather
 * than an interceptor because NestJS wraps every request of an intercepted route in RxJS and async
 * resources, a cost paid on the hot path. Multipart bodies are left to multer.
 */
@Injectable()
export class JsonBodyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<GatewayRequest>();
    if (!BODY_METHODS.has(req.method) || (req.headers['content-type'] ?? '').startsWith('multipart/')) return true;
    const invalidCode =
      this.reflector.getAllAndOverride<ErrorCode>(INVALID_BODY_CODE, [context.getHandler(), context.getClass()]) ??
      ErrorCode.InvalidJson;
    const limits = this.config.limits;
    const body = await readJson(req, limits.json_body_max_bytes, invalidCode);
    const violation = checkJsonShape(body, { maxDepth: limits.json_body_max_depth, maxKeys: limits.json_body_max_keys });
    if (violation?.limit === 'depth') {
      throw new GatewayError(
        ErrorCode.InvalidRequest,
        `The request body nests objects and arrays deeper than limits.json_body_max_depth (${limits.json_body_max_depth}).`,
      );
    }
    if (violation?.limit === 'keys') {
      throw new GatewayError(
        ErrorCode.InvalidRequest,
        `The request body has more keys and array elements than limits.json_body_max_keys (${limits.json_body_max_keys}).`,
      );
    }
    req.body = body;
    return true;
  }
}

function readJson(req: GatewayRequest, limit: number, invalidCode: ErrorCode): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > limit) {
    return Promise.reject(tooLarge(limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.resume();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.trim() === '') {
        reject(new GatewayError(invalidCode, 'The request body is empty; send a JSON object.'));
        return;
      }
      try {
        resolve(JSON.parse(text));
      } catch (err) {
        reject(new GatewayError(invalidCode, `The request body is not valid JSON: ${(err as Error).message}`));
      }
    };
    const onError = (err: Error) => {
      cleanup();
      reject(new GatewayError(ErrorCode.InvalidRequest, `Could not read the request body: ${err.message}`));
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError(ErrorCode.PayloadTooLarge, `The request body exceeds the limit of ${limit} bytes.`);
}
