import { GatewayError } from './gateway-error';

/** The routes of Anthropic's Messages API (src/messages/): their errors use Anthropic's envelope. */
export const ANTHROPIC_ROUTES: ReadonlySet<string> = new Set(['/v1/messages', '/v1/messages/count_tokens']);

/** The error types of Anthropic's API, as its SDKs read them (https://docs.anthropic.com/en/api/errors). */
export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'billing_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error';

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: AnthropicErrorType; message: string; code: string; param: string | null };
}

/** Anthropic names the error type after the status; our `code` says more, and goes alongside. */
export function anthropicErrorType(status: number): AnthropicErrorType {
  if (status >= 500) return 'api_error';
  switch (status) {
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    default:
      return 'invalid_request_error';
  }
}

export function anthropicErrorBody(error: GatewayError): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(error.status), message: error.message, code: error.code, param: error.param } };
}

/** The error body a route answers with: Anthropic's envelope on its routes, OpenAI's everywhere else. */
export function errorBodyFor(path: string, error: GatewayError): object {
  return isAnthropicRoute(path) ? anthropicErrorBody(error) : error.toBody();
}

/** `path` without its query string; one trailing slash is the same route (as RouteRulesMiddleware reads it). */
export function isAnthropicRoute(path: string): boolean {
  const query = path.indexOf('?');
  const bare = query === -1 ? path : path.slice(0, query);
  return ANTHROPIC_ROUTES.has(bare.length > 1 && bare.endsWith('/') ? bare.slice(0, -1) : bare);
}
