import type { Request } from 'express';

export interface AuthContext {
  accountId: string;
  keyId: string;
  /** The key's budget (its month spend and limit, shared with the key it was rotated from). */
  budgetId?: string;
  /** The key has a monthly limit of its own: its requests hold in a lease of the key's (docs/billing.md). */
  limited?: boolean;
  /** Catalog ids the key may use for chat, Responses and speech; null or absent: all. */
  models?: string[] | null;
}

export interface GatewayRequest extends Request {
  id: string;
  /** When the request arrived (`process.hrtime.bigint()`), set with its id. */
  receivedAt?: bigint;
  auth?: AuthContext;
}
