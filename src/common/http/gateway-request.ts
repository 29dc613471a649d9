import type { Request } from 'express';

export interface AuthContext {
  accountId: string;
  keyId: string;
}

/** What the usage record of this request will say; filled in as the request progresses. */
export interface UsageDraft {
  endpoint: string;
  startedAt: bigint;
  model: string | null;
  promptTokens: number;
  completionTokens: number;
  audioSeconds: number;
  inputChars: number;
  streamed: boolean;
  errorCode: string | null;
  /** Set when billing wrote the record inside its settlement transaction. */
  recorded: boolean;
  /** While a chat hold is open, settlement writes the record; the response's close must not. */
  awaitingSettlement: boolean;
  /** The status seen when the response closed while awaiting settlement. */
  closedStatus: number | null;
}

export interface GatewayRequest extends Request {
  id: string;
  auth?: AuthContext;
  usage?: UsageDraft;
}
