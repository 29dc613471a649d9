import type { Response } from 'express';
import { abortOnClientClose } from '../common/http/client-abort';
import { GatewayRequest } from '../common/http/gateway-request';
import { ErrorCode } from '../errors';
import { UsageMeter } from '../usage/usage-meter';
import { ChatRequest } from './chat-request.pipe';
import { ChatCall } from './chat.service';

/** The call a controller over chat (chat completions, Responses) hands to ChatService, its meter told what it serves. */
export function chatCall(endpoint: string, req: GatewayRequest, res: Response, meter: UsageMeter, chat: ChatRequest): ChatCall {
  meter.describe({ model: chat.model.id, streamed: chat.stream });
  return { endpoint, requestId: req.id, accountId: req.auth!.accountId, chat, meter, signal: abortOnClientClose(res) };
}

/** The error codes of a route served by ChatService (its own codes come after the API key's shared ones). */
export const CHAT_ERRORS: ErrorCode[] = [
  ErrorCode.InvalidJson, ErrorCode.InvalidRequest, ErrorCode.MissingModel, ErrorCode.UnknownModel, ErrorCode.ModelNotHosted,
  ErrorCode.UpstreamRejected, ErrorCode.InsufficientCredits, ErrorCode.MonthlyLimitReached, ErrorCode.NotFound,
  ErrorCode.PayloadTooLarge, ErrorCode.RateLimitExceeded, ErrorCode.UpstreamError, ErrorCode.UpstreamUnavailable,
];
