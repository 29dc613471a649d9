import type { Params } from 'nestjs-pino';
import { Env } from '../config/env';
import { assignRequestId } from './http/request-id';

/** JSON logs carrying the request id; credentials are redacted wherever they could appear. */
export function loggerParams(env: Env): Params {
  return {
    pinoHttp: {
      level: env.logLevel,
      genReqId: (req, res) => assignRequestId(req, res),
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-api-key"]', 'res.headers["set-cookie"]'],
        censor: '[redacted]',
      },
      customProps: (req) => ({ requestId: (req as { id?: string }).id }),
      autoLogging: { ignore: (req) => req.url === '/healthz' || req.url === '/readyz' },
      quietReqLogger: true,
    },
  };
}
