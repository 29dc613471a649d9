import { describeErrorCode, ErrorType } from './error-catalog';
import { ErrorCode } from './error-code';

/** A domain failure with a stable code. Services throw it; the global filter renders it. */
export class GatewayError extends Error {
  readonly status: number;
  readonly type: ErrorType;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly param: string | null = null,
    statusOverride?: number,
    /** Sent as Retry-After: when retrying may succeed. */
    readonly retryAfterS: number | null = null,
  ) {
    super(message);
    const shape = describeErrorCode(code);
    this.status = statusOverride ?? shape.status;
    this.type = shape.type;
  }

  toBody(): ErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}
