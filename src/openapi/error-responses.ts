import type { ResponseObject } from '@nestjs/swagger';
import { describeErrorCode, ErrorCode } from '../errors';

export type RouteAuth = 'api_key' | 'admin_token' | 'none';

/** Codes every route of an authentication kind can answer with, whatever the route does. */
export const SHARED_ERRORS: Record<RouteAuth, readonly ErrorCode[]> = {
  api_key: [ErrorCode.InvalidApiKey, ErrorCode.InternalError],
  // 429: an address that sent too many wrong admin tokens (AdminTokenThrottle).
  admin_token: [ErrorCode.InvalidAdminToken, ErrorCode.RateLimitExceeded, ErrorCode.InternalError],
  none: [],
};

/**
 * Codes answered with a second status besides their catalog one: upstream_unavailable is 503 (with
 * Retry-After) when every deployment of the model is out, 504 when an engine cannot be reached.
 */
const ALSO_ANSWERED_WITH: Partial<Record<ErrorCode, number>> = { [ErrorCode.UpstreamUnavailable]: 503 };

const ERROR_RESPONSE_REF = '#/components/schemas/ErrorResponse';

/** One OpenAPI response per status the codes map to, each listing its codes with an example body. */
export function errorResponses(codes: readonly ErrorCode[]): Map<number, ResponseObject & { 'x-error-codes': ErrorCode[] }> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    for (const status of [describeErrorCode(code).status, ALSO_ANSWERED_WITH[code]]) {
      if (status !== undefined) byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
    }
  }
  const sorted = [...byStatus.entries()].sort(([a], [b]) => a - b);
  return new Map(
    sorted.map(([status, list]) => [
      status,
      {
        description: list.map((c) => (c === ErrorCode.UpstreamRejected ? `${c} (the upstream's own 4xx status)` : c)).join(', '),
        'x-error-codes': list,
        content: {
          'application/json': {
            schema: { $ref: ERROR_RESPONSE_REF },
            examples: Object.fromEntries(
              list.map((code) => [code, { value: { error: { message: '…', type: describeErrorCode(code).type, param: null, code } } }]),
            ),
          },
        },
      },
    ]),
  );
}
