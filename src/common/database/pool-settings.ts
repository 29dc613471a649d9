import { PoolConfig } from 'pg';

/** Giving up on a connection (or on a free one from a full pool) after this long. */
export const CONNECT_TIMEOUT_MS = 1000;
/** PostgreSQL cancels a statement running longer (and rolls it back): nothing on the request path takes near that. */
export const STATEMENT_TIMEOUT_MS = 1000;
/**
 * The client stops waiting for an answer after this long: it covers a server that is unreachable
 * without closing the connection. Longer than the statement timeout, so that normally the server
 * cancels first and the outcome is known (rolled back).
 */
export const QUERY_TIMEOUT_MS = 1250;

/**
 * Timeouts shared by both pools, so a request that needs the database ends within 2 s while it is
 * unreachable, stopped or restarting (docs/operations.md, "Faults"). Migrations run without them.
 */
export function requestPathTimeouts(): Pick<PoolConfig, 'connectionTimeoutMillis' | 'statement_timeout' | 'query_timeout' | 'keepAlive'> {
  return {
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    keepAlive: true,
  };
}
