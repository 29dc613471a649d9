import { Inject, Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { ROOT_LOGGER } from '../logging/root-logger';
import { assignRequestId } from './request-id';
import { pathOf } from './url-path';

const UNLOGGED_PATHS = new Set(['/healthz', '/readyz']);

/** Gives the request its id and arrival time before the guards run, and logs one line when its response closes. */
@Injectable()
export class AccessLogMiddleware implements NestMiddleware {
  constructor(@Inject(ROOT_LOGGER) private readonly logger: Logger) {}

  use(req: Request & { receivedAt?: bigint }, res: Response, next: NextFunction): void {
    req.receivedAt = process.hrtime.bigint();
    const requestId = assignRequestId(req, res);
    const path = pathOf(req.originalUrl);
    if (UNLOGGED_PATHS.has(path) || !this.logger.isLevelEnabled('info')) return next();
    const start = req.receivedAt;
    res.once('close', () => {
      const responseTimeMs = Number((process.hrtime.bigint() - start) / 1000n) / 1000;
      this.logger.info(
        { requestId, method: req.method, path, status: res.statusCode, responseTimeMs },
        res.writableFinished ? 'request completed' : 'request aborted',
      );
    });
    next();
  }
}
