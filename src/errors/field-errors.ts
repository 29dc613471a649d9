import { ErrorCode } from './error-code';
import { GatewayError } from './gateway-error';

/** A 400 naming the field at fault. */
export function invalidField(param: string, message: string): GatewayError {
  return new GatewayError(ErrorCode.InvalidRequest, `Invalid ${param}: ${message}`, param);
}

/** A 400 for a feature of a provider's own platform (OpenAI's, Anthropic's) that a gateway over chat completions cannot offer. */
export function unsupportedField(param: string, why: string): GatewayError {
  return new GatewayError(ErrorCode.UnsupportedParameter, `Unsupported parameter ${param}: ${why}`, param);
}
