import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Logger } from 'pino';
import { ErrorCode, GatewayError } from '../../errors';
import { sendGatewayError } from './error-reply';
import { GatewayRequest } from './gateway-request';
import { pathOf } from './url-path';

const UNLOGGED_PATHS = new Set(['/healthz', '/readyz']);
const POST_ONLY = new Set(['/v1/chat/completions', '/v1/responses', '/v1/messages', '/v1/messages/count_tokens', '/v1/audio/transcriptions', '/v1/audio/speech']);
const GET_ONLY = new Set(['/v1/models']);

/**
 * What every request gets before the route's guards run, as Fastify's first hook (for routes, the
 * not-found handler and the documentation alike): its arrival time and the x-request-id header of its id
 * (`genReqId`), its access-log line when its response closes, and the method rules of DESIGN.md section
 * 5 step 1, which come before authentication. A refused method goes to Nest's exception filter.
 */
export function registerRequestHooks(fastify: FastifyInstance, logger: Logger): void {
  fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const req = request as GatewayRequest;
    req.receivedAt = process.hrtime.bigint();
    req.raw.gatewayRequest = req;
    // On the raw response, so that answers written to it directly (streams) carry it as well.
    reply.raw.setHeader('x-request-id', req.id);
    const path = pathOf(req.url);
    if (!UNLOGGED_PATHS.has(path) && logger.isLevelEnabled('info')) logWhenClosed(logger, req, reply, path);
    done(methodRefusal(req.method, path) ?? undefined);
  });
}

function logWhenClosed(logger: Logger, req: GatewayRequest, reply: FastifyReply, path: string): void {
  const start = req.receivedAt!;
  const res = reply.raw;
  res.once('close', () => {
    const responseTimeMs = Number((process.hrtime.bigint() - start) / 1000n) / 1000;
    logger.info(
      { requestId: req.id, method: req.method, path, status: res.statusCode, responseTimeMs },
      res.writableFinished ? 'request completed' : 'request aborted',
    );
  });
}

/** DESIGN.md section 5 step 1: method rules that come before authentication. */
export function methodRefusal(method: string, url: string): GatewayError | null {
  const path = normalise(url);
  if (POST_ONLY.has(path) && method !== 'POST') {
    return new GatewayError(ErrorCode.NotFound, `${method} ${path} is not served; use POST.`);
  }
  if ((GET_ONLY.has(path) || path.startsWith('/v1/models/')) && method !== 'GET') {
    return new GatewayError(ErrorCode.MethodNotAllowed, `${method} is not allowed on ${path}; use GET.`);
  }
  return null;
}

function normalise(url: string): string {
  const path = pathOf(url);
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/**
 * Fastify's `frameworkErrors`: a request its router refuses before any hook (a path whose percent-encoding
 * does not decode, a route parameter over the length limit) gets the gateway's error object too.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const tooLong = error.statusCode === 414;
  const refusal = tooLong
    ? new GatewayError(ErrorCode.InvalidRequest, 'A segment of the request path is too long.', null, 414)
    : new GatewayError(ErrorCode.InvalidRequest, 'The request path is not valid: its percent-encoding does not decode.');
  reply.raw.setHeader('x-request-id', request.id);
  sendGatewayError(request, reply, refusal);
}
