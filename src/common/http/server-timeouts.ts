import type { Server } from 'node:http';
import { LimitsConfig } from '../../config/gateway-config.schema';

/**
 * Idle keep-alive connections are closed after this long. Short, so that a stopping replica is not held
 * by connections that go idle only after it began to close (Node closes those idle at that moment only).
 * The proxy in front closes its idle connections sooner (deploy/nginx.conf: keepalive_timeout 4s), so it
 * never sends a request on a connection the gateway is closing.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** Node checks the header and request timeouts of its connections every so often (30 s by default). */
const MAX_CHECK_INTERVAL_MS = 1000;

/**
 * How long a client may take to send a request: its headers within limits.headers_timeout_ms, all of
 * it (headers and body) within limits.request_timeout_ms. The response is not bounded by these: a
 * long stream to the client runs as long as it needs. Set before the server listens.
 */
export function applyServerTimeouts(server: Server, limits: LimitsConfig): void {
  server.requestTimeout = limits.request_timeout_ms;
  server.headersTimeout = Math.min(limits.headers_timeout_ms, limits.request_timeout_ms);
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // A constructor option of http.Server that Nest does not pass; Node reads the field when listening
  // starts. Checked often enough that a timeout fires within a quarter of its length (at most 1 s late).
  const interval = Math.max(10, Math.min(MAX_CHECK_INTERVAL_MS, Math.floor(server.headersTimeout / 4)));
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = interval;
}
