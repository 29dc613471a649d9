import type { Request } from 'express';

export interface AuthContext {
  accountId: string;
  keyId: string;
}

export interface GatewayRequest extends Request {
  id: string;
  /** When the request arrived (`process.hrtime.bigint()`), set with its id. */
  receivedAt?: bigint;
  auth?: AuthContext;
}
