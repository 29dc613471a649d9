import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { IncomingMessage } from 'node:http';
import { GATEWAY_CONFIG } from '../../config/config.tokens';
import { GatewayConfig, LimitsConfig } from '../../config/gateway-config.schema';
import { INVALID_BODY_CODE } from '../decorators/invalid-body-code.decorator';
import { ErrorCode, GatewayError } from '../../errors';
import { GatewayRequest } from '../http/gateway-request';
import { checkJsonShape } from '../json/json-shape';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Reads and parses a route's JSON body. Listed last in a route's guards, so that authentication,
 * burst and entitlement checks come before any body is read (DESIGN.md section 5); a guard rather
 * than an interceptor because NestJS wraps every request of an intercepted route in RxJS and async
 * resources, a cost paid on the hot path. Multipart bodies are left to the upload interceptor. Read from
 * Node's request under Fastify's, whose content-type parsers read nothing (common/http/unread-bodies.ts).
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
    req.body = await readJson(req.raw, this.config.limits, invalidCode);
    return true;
  }
}

function readJson(req: IncomingMessage, limits: LimitsConfig, invalidCode: ErrorCode): Promise<unknown> {
  const limit = limits.json_body_max_bytes;
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > limit) {
    return Promise.reject(tooLarge(limit));
  }
  // The client left while the checks before the body ran: its body will never come.
  if (req.destroyed) {
    return Promise.reject(new GatewayError(ErrorCode.InvalidRequest, 'The connection closed before the request body was read.'));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // The rest is not read: the exception filter closes the connection after the 413 (refuseUnreadBody).
        cleanup();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      const bytes = Buffer.concat(chunks);
      const shapeProblem = outOfShape(bytes, limits);
      if (shapeProblem) {
        reject(shapeProblem);
        return;
      }
      const text = bytes.toString('utf8');
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

/** A body nested too deep or with too many keys, refused before it is parsed. */
function outOfShape(bytes: Buffer, limits: LimitsConfig): GatewayError | null {
  const violation = checkJsonShape(bytes, { maxDepth: limits.json_body_max_depth, maxKeys: limits.json_body_max_keys });
  if (violation === 'depth') {
    return new GatewayError(
      ErrorCode.InvalidRequest,
      `The request body nests objects and arrays deeper than limits.json_body_max_depth (${limits.json_body_max_depth}).`,
    );
  }
  if (violation === 'keys') {
    return new GatewayError(
      ErrorCode.InvalidRequest,
      `The request body has more keys and array elements than limits.json_body_max_keys (${limits.json_body_max_keys}).`,
    );
  }
  return null;
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError(ErrorCode.PayloadTooLarge, `The request body exceeds the limit of ${limit} bytes.`);
}
