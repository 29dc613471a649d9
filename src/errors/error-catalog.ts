import { ErrorCode } from './error-code';

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'insufficient_quota'
  | 'rate_limit_error'
  | 'api_error';

export interface ErrorShape {
  status: number;
  type: ErrorType;
}

function assertUnreachable(code: never): never {
  throw new Error(`Unmapped error code: ${String(code)}`);
}

/** Exhaustive code → status/type map; the compiler fails when a new code is left out. */
export function describeErrorCode(code: ErrorCode): ErrorShape {
  switch (code) {
    case ErrorCode.InvalidJson:
    case ErrorCode.InvalidRequest:
    case ErrorCode.MissingModel:
    case ErrorCode.UnknownModel:
    case ErrorCode.ModelNotHosted:
    case ErrorCode.ModelNotAllowed:
    case ErrorCode.MissingInput:
    case ErrorCode.InvalidInput:
    case ErrorCode.InputTooLong:
    case ErrorCode.UnsupportedResponseFormat:
    case ErrorCode.InvalidUpload:
    case ErrorCode.MissingFile:
    case ErrorCode.UnsupportedFileFormat:
    case ErrorCode.InvalidResponseFormat:
    case ErrorCode.UnsupportedParameter:
    // The Idempotency-Key was used for another route or body (docs/idempotency.md).
    case ErrorCode.IdempotencyKeyReused:
      return { status: 400, type: 'invalid_request_error' };
    // The first request with this Idempotency-Key is still running: retry after Retry-After.
    case ErrorCode.IdempotencyInProgress:
      return { status: 409, type: 'invalid_request_error' };
    case ErrorCode.InvalidApiKey:
    case ErrorCode.InvalidAdminToken:
      return { status: 401, type: 'authentication_error' };
    case ErrorCode.InsufficientCredits:
    case ErrorCode.MonthlyLimitReached:
    case ErrorCode.KeyLimitReached:
    case ErrorCode.SubscriptionRequired:
    case ErrorCode.FairUseLimitReached:
      return { status: 402, type: 'insufficient_quota' };
    case ErrorCode.NotFound:
    case ErrorCode.ModelNotFound:
      return { status: 404, type: 'invalid_request_error' };
    case ErrorCode.MethodNotAllowed:
      return { status: 405, type: 'invalid_request_error' };
    case ErrorCode.PayloadTooLarge:
      return { status: 413, type: 'invalid_request_error' };
    // The request (headers or body) did not arrive in time; the connection is closed.
    case ErrorCode.RequestTimeout:
      return { status: 408, type: 'invalid_request_error' };
    case ErrorCode.RateLimitExceeded:
      return { status: 429, type: 'rate_limit_error' };
    // The upstream's own 4xx status is passed through; 400 is only the fallback.
    case ErrorCode.UpstreamRejected:
      return { status: 400, type: 'invalid_request_error' };
    case ErrorCode.InternalError:
    case ErrorCode.ConfigError:
      return { status: 500, type: 'api_error' };
    case ErrorCode.UpstreamError:
      return { status: 502, type: 'api_error' };
    // The database cannot be reached right now: retrying after Retry-After may succeed.
    case ErrorCode.ServiceUnavailable:
      return { status: 503, type: 'api_error' };
    case ErrorCode.UpstreamUnavailable:
    case ErrorCode.UpstreamTimeout:
      return { status: 504, type: 'api_error' };
    default:
      return assertUnreachable(code);
  }
}
