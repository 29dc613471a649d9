import { Body, Controller, Post, Req, Res, UseGuards } from '@nestjs/common';
import { AccountThrottlerGuard } from '../burst-limit/account-throttler.guard';
import { JsonBodyGuard } from '../common/guards/json-body.guard';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { ErrorCode } from '../errors';
import { ApiRoute } from '../openapi/api-route.decorator';
import { chatCompletionBody } from './dto/chat-completion.schema';
import { Metered } from '../usage/metered.decorator';
import { UsageMeter } from '../usage/usage-meter';
import { ChatCompletionRequest, ChatRequestPipe } from './chat-request.pipe';
import { ChatCompletionSse } from './chat-stream-sink';
import { CHAT_ERRORS, chatCall, COST_HEADER } from './chat-call';
import { ChatService } from './chat.service';
import { IgnoredParamsReport } from './ignored-params';
import { SseWriter } from './sse';
import { Idempotent } from '../idempotency/idempotent.decorator';

@Controller('v1/chat')
export class ChatController {
  constructor(
    private readonly chat: ChatService,
    private readonly ignoredParams: IgnoredParamsReport,
  ) {}

  @Post('completions')
  @Idempotent('/v1/chat/completions')
  @UseGuards(AccountThrottlerGuard, JsonBodyGuard)
  @ApiRoute({
    tag: 'v1',
    summary: 'Chat completion, optionally streamed as SSE; billed per token from prepaid credits',
    auth: 'api_key',
    errors: [...CHAT_ERRORS, ErrorCode.UnsupportedParameter],
    body: { contentType: 'application/json', schema: chatCompletionBody },
    success: {
      status: 200,
      description: 'A chat.completion object with usage, or chat.completion.chunk SSE events ending in [DONE]',
      content: { 'application/json': { type: 'object' }, 'text/event-stream': { type: 'string' } },
    },
  })
  async complete(@Req() req: GatewayRequest, @Res() res: GatewayReply, @Metered() meter: UsageMeter, @Body(ChatRequestPipe) request: ChatCompletionRequest): Promise<void> {
    const { chat, ignored } = request;
    const call = chatCall('/v1/chat/completions', req, res.raw, meter, chat);
    this.ignoredParams.report('/v1/chat/completions', res.raw, ignored);
    if (chat.stream) return this.chat.stream(call, new ChatCompletionSse(new SseWriter(res.raw)));
    const answer = await this.chat.answer(call);
    if (answer.costUsd) res.raw.setHeader(COST_HEADER, answer.costUsd);
    res.code(200).send(answer.body);
    await answer.charge();
  }
}
