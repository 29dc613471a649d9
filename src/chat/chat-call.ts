import type { ServerResponse } from 'node:http';
import { abortOnClientClose } from '../common/http/client-abort';
import { GatewayRequest } from '../common/http/gateway-request';
import { ErrorCode } from '../errors';
import { assertModelAllowed } from '../keys/allowed-model';
import { UsageMeter } from '../usage/usage-meter';
import { ChatRequest } from './chat-request.pipe';
import { ChatCall } from './chat.service';

/**
 * The call a controller over chat (chat completions, Responses, Messages) hands to ChatService, its meter told what it
 * serves. A key's model list is checked here: after the body's 400s, before billing's 402s.
 */
export function chatCall(endpoint: string, req: GatewayRequest, res: ServerResponse, meter: UsageMeter, chat: ChatRequest): ChatCall {
  meter.describe({ model: chat.model.id, streamed: chat.stream });
  const { accountId, budgetId, limited } = req.auth!;
  assertModelAllowed(req.auth, chat.model.id);
  const key = budgetId ? { budgetId, limited: limited === true } : undefined;
  // x-ratelimit-* on Node's response, as the burst limit's: a streamed answer writes its status line there.
  const rate = { subject: req.auth!, header: (name: string, value: string) => res.setHeader(name, value) };
  return { endpoint, requestId: req.id, accountId, key, chat, meter, signal: abortOnClientClose(res), rate };
}

/** The header of a JSON answer's charge in USD, six decimals (issue 35; also `usage.cost`). */
export const COST_HEADER = 'x-gateway-cost-usd';

/** The error codes of a route served by ChatService (its own codes come after the API key's shared ones). */
export const CHAT_ERRORS: ErrorCode[] = [
  ErrorCode.InvalidJson, ErrorCode.InvalidRequest, ErrorCode.MissingModel, ErrorCode.UnknownModel, ErrorCode.ModelNotHosted,
  ErrorCode.ModelNotAllowed, ErrorCode.UpstreamRejected, ErrorCode.InsufficientCredits, ErrorCode.MonthlyLimitReached,
  ErrorCode.KeyLimitReached, ErrorCode.NotFound,
  ErrorCode.PayloadTooLarge, ErrorCode.RateLimitExceeded, ErrorCode.UpstreamError, ErrorCode.UpstreamUnavailable,
  ErrorCode.IdempotencyKeyReused, ErrorCode.IdempotencyInProgress,
];
