import { Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { ErrorCode, GatewayError } from '../../errors';
import { pathOf } from './url-path';

const POST_ONLY = new Set(['/v1/chat/completions', '/v1/responses', '/v1/messages', '/v1/messages/count_tokens', '/v1/audio/transcriptions', '/v1/audio/speech']);
const GET_ONLY = new Set(['/v1/models']);

/** DESIGN.md section 5 step 1: method rules that come before authentication. */
@Injectable()
export class RouteRulesMiddleware implements NestMiddleware {
  use(req: Request, _res: Response, next: NextFunction): void {
    const path = normalise(req.originalUrl);
    if (POST_ONLY.has(path) && req.method !== 'POST') {
      return next(new GatewayError(ErrorCode.NotFound, `${req.method} ${path} is not served; use POST.`));
    }
    if ((GET_ONLY.has(path) || path.startsWith('/v1/models/')) && req.method !== 'GET') {
      return next(new GatewayError(ErrorCode.MethodNotAllowed, `${req.method} is not allowed on ${path}; use GET.`));
    }
    next();
  }
}

function normalise(url: string): string {
  const path = pathOf(url);
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}
