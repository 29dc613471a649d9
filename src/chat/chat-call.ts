import type { Response } from 'express';
import { abortOnClientClose } from '../common/http/client-abort';
import { GatewayRequest } from '../common/http/gateway-request';
import { UsageMeter } from '../usage/usage-meter';
import { ChatRequest } from './chat-request.pipe';
import { ChatCall } from './chat.service';

/** The call a controller over chat (chat completions, Responses) hands to ChatService, its meter told what it serves. */
export function chatCall(endpoint: string, req: GatewayRequest, res: Response, meter: UsageMeter, chat: ChatRequest): ChatCall {
  meter.describe({ model: chat.model.id, streamed: chat.stream });
  return { endpoint, requestId: req.id, accountId: req.auth!.accountId, chat, meter, signal: abortOnClientClose(res) };
}
