import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';

export interface AuthContext {
  accountId: string;
  keyId: string;
  /** The key's budget (its month spend and limit, shared with the key it was rotated from). */
  budgetId?: string;
  /** The key has a monthly limit of its own: its requests hold in a lease of the key's (docs/billing.md). */
  limited?: boolean;
  /** Catalog ids the key may use for chat, Responses and speech; null or absent: all. */
  models?: string[] | null;
  /** The key's and its account's own rpm and tpm (null: the config's default); absent: the defaults (src/rate-limits/). */
  rateLimits?: OwnRateLimits;
}

/** Requests and tokens per minute set on a key or an account; null: the config's default. */
export interface RateLimitValues {
  rpm: number | null;
  tpm: number | null;
}

export interface OwnRateLimits {
  key: RateLimitValues;
  account: RateLimitValues;
}

/**
 * A request as guards, interceptors, pipes and controllers see it: Fastify's, whose `id` is the gateway's
 * request id (`genReqId`), with what the gateway adds. Its body is read by the route's own guard or
 * interceptor after the checks (JsonBodyGuard, TranscriptionUploadInterceptor), from `raw`.
 */
export interface GatewayRequest extends FastifyRequest {
  raw: GatewayIncomingMessage;
  /** When the request arrived (`process.hrtime.bigint()`), set with its id. */
  receivedAt?: bigint;
  auth?: AuthContext;
}

export type GatewayReply = FastifyReply;

/** Node's request under a GatewayRequest: it knows its Fastify request, for what reaches only the socket (client errors). */
export interface GatewayIncomingMessage extends IncomingMessage {
  gatewayRequest?: GatewayRequest;
}
