import type { IncomingHttpHeaders } from 'node:http';
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

/** The header Anthropic's SDKs send with every request; on the shared routes below it asks for Anthropic's shapes. */
export const ANTHROPIC_VERSION_HEADER = 'anthropic-version';

/** Routes of both dialects (the Models API): Anthropic's shapes and envelope when the request names an `anthropic-version`. */
const SHARED_ROUTE = /^\/v1\/models(\/|$)/;

/** Whether a request on a route both dialects share asked for Anthropic's shapes. */
export function asksForAnthropic(headers: IncomingHttpHeaders): boolean {
  return headers[ANTHROPIC_VERSION_HEADER] !== undefined;
}

/** The error body a request is answered with: Anthropic's envelope on its routes (and on the shared ones when asked), OpenAI's everywhere else. */
export function errorBodyFor(path: string, headers: IncomingHttpHeaders, error: GatewayError): object {
  return speaksAnthropic(path, headers) ? anthropicErrorBody(error) : error.toBody();
}

function speaksAnthropic(path: string, headers: IncomingHttpHeaders): boolean {
  const bare = routePath(path);
  return ANTHROPIC_ROUTES.has(bare) || (SHARED_ROUTE.test(bare) && asksForAnthropic(headers));
}

/** Whether `path` is one of the Messages API's own routes. */
export function isAnthropicRoute(path: string): boolean {
  return ANTHROPIC_ROUTES.has(routePath(path));
}

/** `path` without its query string; one trailing slash is the same route (as RouteRulesMiddleware reads it). */
function routePath(path: string): string {
  const query = path.indexOf('?');
  const bare = query === -1 ? path : path.slice(0, query);
  return bare.length > 1 && bare.endsWith('/') ? bare.slice(0, -1) : bare;
}
