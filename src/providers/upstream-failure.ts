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
  | 'rejected' // upstream 4xx: its status and message pass through
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

/** The same failure, known to have happened before any answer's headers arrived. */
export function beforeHeaders(failure: UpstreamFailure): UpstreamFailure {
  return failure.beforeHeaders ? failure : new UpstreamFailure(failure.kind, failure.message, failure.status, true, failure.retryAfterS);
}

/**
 * How an endpoint reports an upstream failure (DESIGN.md section 5 step 7): a 4xx passes through with its
 * status as upstream_rejected; anything else is 502 upstream_error, except that transcription
 * (`unavailableIs504`) answers 504 for an unreachable or silent upstream. Other errors come back unchanged.
 */
export function asGatewayError(err: unknown, service: string, unavailableIs504 = false): unknown {
  return err instanceof UpstreamFailure ? upstreamGatewayError(err, service, unavailableIs504) : err;
}

export function upstreamGatewayError(failure: UpstreamFailure, service: string, unavailableIs504 = false): GatewayError {
  if (failure.kind === 'rejected') return new GatewayError(ErrorCode.UpstreamRejected, failure.message, null, failure.status ?? 400);
  if (unavailableIs504 && failure.kind === 'unreachable') {
    return new GatewayError(ErrorCode.UpstreamUnavailable, `The ${service} service is unreachable: ${failure.message}`);
  }
  if (unavailableIs504 && failure.kind === 'timeout') {
    return new GatewayError(ErrorCode.UpstreamTimeout, `The ${service} service did not answer in time: ${failure.message}`);
  }
  return new GatewayError(ErrorCode.UpstreamError, `The ${service} service failed: ${failure.message}`);
}
