/** Socket failures of a connection to the database (Node system error codes). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs of a server that is going away, starting or out of room: 57P01 admin_shutdown,
 * 57P02 crash_shutdown, 57P03 cannot_connect_now, 57014 query_canceled (our statement_timeout),
 * 53300 too_many_connections; class 08 (connection exception) is matched by prefix.
 */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '57014', '53300']);

/** node-postgres and pg-pool report these without a code. */
const CLIENT_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'is not queryable',
];

/**
 * Whether an error means "the database cannot be reached right now" (refused, reset, terminated,
 * shutting down or starting, connect or statement timeout), as opposed to a fault of the query or
 * the data. Looks through TypeORM's QueryFailedError (driverError), `cause` and AggregateError.
 */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (depth > 4 || typeof err !== 'object' || err === null) return false;
  const { code, message, driverError, cause, errors } = err as {
    code?: unknown;
    message?: unknown;
    driverError?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || SERVER_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
  if (typeof message === 'string' && CLIENT_MESSAGES.some((m) => message.includes(m))) return true;
  if (isDatabaseUnavailable(driverError, depth + 1) || isDatabaseUnavailable(cause, depth + 1)) return true;
  return Array.isArray(errors) && errors.some((e) => isDatabaseUnavailable(e, depth + 1));
}
