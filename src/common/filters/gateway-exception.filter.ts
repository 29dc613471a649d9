import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Inject, Logger, Optional } from '@nestjs/common';
import { ThrottlerException } from '@nestjs/throttler';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GATEWAY_CONFIG } from '../../config/config.tokens';
import { GatewayConfig } from '../../config/gateway-config.schema';
import { isDatabaseUnavailable } from '../database/database-unavailable';
import { ErrorCode, GatewayError } from '../../errors';
import { largestReadBody } from '../http/body-limits';
import { sendGatewayError } from '../http/error-reply';
import { ErrorAnswerListener } from '../http/error-answer-listener';
import { GatewayReply, GatewayRequest } from '../http/gateway-request';
import { discardUnreadBody, refuseUnreadBody } from '../http/refuse-unread-body';

const RETRY_AFTER_S = 1;

/** Turns every failure (ours, Nest's, Fastify's) into the error object; unknown ones are 500 internal_error. */
@Catch()
export class GatewayExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('GatewayExceptionFilter');
  private readonly discardBytes: number;
  private readonly bodyIdleMs: number;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig, @Optional() private readonly errorAnswers?: ErrorAnswerListener) {
    this.discardBytes = largestReadBody(config.limits);
    this.bodyIdleMs = config.limits.body_idle_timeout_ms;
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<GatewayRequest>();
    const reply = ctx.getResponse<GatewayReply>();
    const res = reply.raw;
    const requestId = req.id;
    const error = this.toGatewayError(exception, requestId);
    this.errorAnswers?.answeredWithError(req, res, error.code);
    if (res.headersSent) {
      // A streamed response already started; the stream writer reports the failure in-band.
      if (!res.writableEnded) res.end();
      return;
    }
    if (!req.raw.complete) this.leaveUnreadBody(req.raw, res, error);
    // A short outage: clients that honour Retry-After come back when the database may be back.
    if (error.code === ErrorCode.ServiceUnavailable) reply.header('Retry-After', String(RETRY_AFTER_S));
    // When retrying may succeed: the first upstream of the model to let a probe through (src/routing/), the end of an admin-token lock-out.
    else if (error.retryAfterS !== null) reply.header('Retry-After', String(error.retryAfterS));
    sendGatewayError(req, reply, error);
  }

  /** A request answered before its body was read to the end (DESIGN.md 12.3). */
  private leaveUnreadBody(req: IncomingMessage, res: ServerResponse, error: GatewayError): void {
    // The body itself is refused (past its limit, stalled): no more of it is read.
    if (error.code === ErrorCode.PayloadTooLarge || error.code === ErrorCode.RequestTimeout) refuseUnreadBody(req, res);
    // Refused before or apart from its body (401, 402, 403, 429, 400): the client still writing it reads the answer.
    else discardUnreadBody(req, res, this.discardBytes, this.bodyIdleMs);
  }

  private toGatewayError(exception: unknown, requestId: string): GatewayError {
    if (exception instanceof GatewayError) return exception;
    if (exception instanceof ThrottlerException) {
      // @nestjs/throttler has already set Retry-After on the response.
      return new GatewayError(ErrorCode.RateLimitExceeded, 'Rate limit exceeded: too many requests for this account; retry after the Retry-After delay.');
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const message = httpExceptionMessage(exception);
      if (status === 404) return new GatewayError(ErrorCode.NotFound, message);
      if (status === 405) return new GatewayError(ErrorCode.MethodNotAllowed, message);
      if (status === 413) return new GatewayError(ErrorCode.PayloadTooLarge, message);
      if (status === 400 || status === 422) return new GatewayError(ErrorCode.InvalidRequest, message);
      if (status === 401) return new GatewayError(ErrorCode.InvalidApiKey, message);
      if (status < 500) return new GatewayError(ErrorCode.InvalidRequest, message, null, status);
      if (status === 503) return new GatewayError(ErrorCode.ServiceUnavailable, message);
    }
    const fastifyStatus = clientStatusOfFastifyError(exception);
    if (fastifyStatus !== null) {
      const message = (exception as Error).message;
      if (fastifyStatus === 413) return new GatewayError(ErrorCode.PayloadTooLarge, message);
      return new GatewayError(ErrorCode.InvalidRequest, message, null, fastifyStatus === 400 ? undefined : fastifyStatus);
    }
    if (isDatabaseUnavailable(exception)) {
      // Expected while PostgreSQL is down or restarting: a warning with the cause, not a stack.
      const cause = exception instanceof Error ? exception.message : String(exception);
      this.logger.warn({ requestId }, `Request ${requestId} answered 503: database unavailable (${cause})`);
      return new GatewayError(ErrorCode.ServiceUnavailable, 'The database is unavailable right now; retry after the Retry-After delay.');
    }
    const err = exception instanceof Error ? exception : new Error(String(exception));
    this.logger.error({ err, requestId }, `Unhandled error in request ${requestId}: ${err.message}`);
    return new GatewayError(ErrorCode.InternalError, `Internal error; quote request id ${requestId} when reporting it.`);
  }
}

/**
 * Fastify's own refusals of a request that reach Nest's error handler (FST_ codes with a 4xx status, e.g. a body
 * Fastify cannot frame). The router's refusals before any hook (a malformed path, an over-long parameter) do not
 * come here: `answerFrameworkError` (common/http/request-hooks.ts) answers them.
 */
function clientStatusOfFastifyError(exception: unknown): number | null {
  if (!(exception instanceof Error)) return null;
  const { code, statusCode } = exception as Error & { code?: unknown; statusCode?: unknown };
  if (typeof code !== 'string' || !code.startsWith('FST_') || typeof statusCode !== 'number') return null;
  return statusCode >= 400 && statusCode < 500 ? statusCode : null;
}

function httpExceptionMessage(exception: HttpException): string {
  const response = exception.getResponse();
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (Array.isArray(message)) return message.join('; ');
  return typeof message === 'string' ? message : exception.message;
}
