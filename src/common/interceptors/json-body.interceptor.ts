import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { from, Observable, switchMap } from 'rxjs';
import { GATEWAY_CONFIG } from '../../config/config.tokens';
import { GatewayConfig } from '../../config/gateway-config.schema';
import { INVALID_BODY_CODE } from '../decorators/invalid-body-code.decorator';
import { ErrorCode, GatewayError } from '../errors';
import { GatewayRequest } from '../http/gateway-request';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Reads and parses JSON bodies after the guards have run, so that authentication, burst and
 * entitlement checks come before any body is read (DESIGN.md section 5). Multipart bodies are
 * left to multer.
 */
@Injectable()
export class JsonBodyInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<GatewayRequest>();
    if (!BODY_METHODS.has(req.method) || (req.headers['content-type'] ?? '').startsWith('multipart/')) {
      return next.handle();
    }
    const invalidCode =
      this.reflector.getAllAndOverride<ErrorCode>(INVALID_BODY_CODE, [context.getHandler(), context.getClass()]) ??
      ErrorCode.InvalidJson;
    return from(readJson(req, this.config.limits.json_body_max_bytes, invalidCode)).pipe(
      switchMap((body) => {
        req.body = body;
        return next.handle();
      }),
    );
  }
}

export function readJson(req: GatewayRequest, limit: number, invalidCode: ErrorCode): Promise<unknown> {
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
