import type { LoggerService } from '@nestjs/common';
import { ErrorCode, GatewayError } from '../errors';

/**
 * How an upstream call failed, before an endpoint decides what the client sees (asGatewayError below): chat maps
 * everything but `rejected` to 502 upstream_error; transcription maps `unreachable` and `timeout`
 * to 504 (DESIGN.md section 5 step 7).
 */
export type UpstreamFailureKind =
  | 'unreachable' // connection refused, DNS failure, connect timeout
  | 'timeout' // no answer (or a silent stream) within timeouts.request_ms
  | 'server_error' // upstream 5xx, or a 429 insufficient_quota (the deployment's account is out of quota)
  | 'bad_response' // malformed body, broken or reset connection mid-answer
  | 'rejected' // any other upstream 4xx: its status and message pass through
  | 'credentials_refused' // upstream 401/403 (or its own way of saying its key is bad): the operator's credential, never the client's
  | 'engine_missing'; // local provider: a required binary (ffmpeg, espeak-ng, pocketsphinx) is not installed

export class UpstreamFailure extends Error {
  constructor(
    readonly kind: UpstreamFailureKind,
    message: string,
    /** The upstream's HTTP status, when it answered. */
    readonly status: number | null = null,
    /** No answer's headers arrived: the request can go to another deployment (src/routing/). */
    readonly beforeHeaders = false,
    /** A 429's Retry-After, in seconds. */
    readonly retryAfterS: number | null = null,
  ) {
    super(message);
  }
}

/**
 * The upstream refused the gateway's own credential (DESIGN.md section 12.3): the client's message is the gateway's,
 * naming the provider; the upstream's own message is kept nowhere (OpenAI's quotes part of the key it was sent).
 * `upstreamCode` is the upstream's error code or type (`invalid_api_key`, `UnrecognizedClientException`), for the log.
 */
export class CredentialsRefused extends UpstreamFailure {
  constructor(
    readonly provider: string,
    status: number,
    readonly upstreamCode: string | null,
  ) {
    super('credentials_refused', `The upstream provider "${provider}" refused the gateway's credentials (HTTP ${status}); the operator must check the credentials configured for it.`, status);
  }
}

/** Says a refused credential at error, with the request it failed; the operator's to fix, so always said, even when another deployment served. */
export function logCredentialsRefused(logger: LoggerService, err: unknown, requestId: string | undefined): void {
  if (!(err instanceof CredentialsRefused)) return;
  const { provider, status, upstreamCode } = err;
  const code = upstreamCode ? `, ${upstreamCode}` : '';
  logger.error({ requestId, provider, upstreamStatus: status, upstreamCode }, `Upstream provider "${provider}" refused the gateway's credentials (HTTP ${status}${code}) for request ${requestId ?? '(none)'}: check its key in the configuration.`);
}

/** The same failure, known to have happened before any answer's headers arrived. */
export function beforeHeaders(failure: UpstreamFailure): UpstreamFailure {
  return failure.beforeHeaders ? failure : new UpstreamFailure(failure.kind, failure.message, failure.status, true, failure.retryAfterS);
}

/**
 * How an endpoint reports an upstream failure (DESIGN.md section 5 step 7): a 4xx passes through with its
 * status as upstream_rejected (a 429 with its Retry-After); a refused credential and anything else is 502 upstream_error, except that transcription
 * (`unavailableIs504`) answers 504 for an unreachable or silent upstream. Other errors come back unchanged.
 */
export function asGatewayError(err: unknown, service: string, unavailableIs504 = false): unknown {
  return err instanceof UpstreamFailure ? upstreamGatewayError(err, service, unavailableIs504) : err;
}

export function upstreamGatewayError(failure: UpstreamFailure, service: string, unavailableIs504 = false): GatewayError {
  if (failure.kind === 'rejected') {
    // A 429 given up on (the last deployment's, once retries are spent) tells the client when the upstream said to come back.
    const retryAfterS = failure.retryAfterS === null ? null : Math.ceil(failure.retryAfterS);
    return new GatewayError(ErrorCode.UpstreamRejected, failure.message, null, failure.status ?? 400, retryAfterS);
  }
  if (failure.kind === 'credentials_refused') return new GatewayError(ErrorCode.UpstreamError, failure.message);
  if (unavailableIs504 && failure.kind === 'unreachable') {
    return new GatewayError(ErrorCode.UpstreamUnavailable, `The ${service} service is unreachable: ${failure.message}`);
  }
  if (unavailableIs504 && failure.kind === 'timeout') {
    return new GatewayError(ErrorCode.UpstreamTimeout, `The ${service} service did not answer in time: ${failure.message}`);
  }
  return new GatewayError(ErrorCode.UpstreamError, `The ${service} service failed: ${failure.message}`);
}
