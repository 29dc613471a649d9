import { Body, Controller, Post, Req, Res, UseGuards } from '@nestjs/common';
import { AccountThrottlerGuard } from '../burst-limit/account-throttler.guard';
import { CHAT_ERRORS, chatCall, COST_HEADER } from '../chat/chat-call';
import { ChatService } from '../chat/chat.service';
import { IgnoredParamsReport } from '../chat/ignored-params';
import { SseWriter } from '../chat/sse';
import { JsonBodyGuard } from '../common/guards/json-body.guard';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { ErrorCode } from '../errors';
import { ApiRoute } from '../openapi/api-route.decorator';
import { NATIVE_ANSWER } from '../providers/chat-contract';
import { Metered } from '../usage/metered.decorator';
import { UsageMeter } from '../usage/usage-meter';
import { createResponseBody } from './dto/responses.schema';
import { newResponseBase, responseFromCompletion } from './response-body';
import { ResponseEventStream } from './response-event-stream';
import { NativeResponseStream } from './native-response-stream';
import { ResponsesPassThroughRequest } from './responses-pass-through';
import { ResponsesRequest, ResponsesRequestPipe } from './responses-request.pipe';
import { Idempotent } from '../idempotency/idempotent.decorator';

/**
 * OpenAI's Responses API, stateless, served by one chat completion: the same checks, hold, upstream call and charge as chat.
 * What chat has no place for is accepted and named in x-gateway-ignored-params (docs/responses.md).
 */
@Controller('v1')
export class ResponsesController {
  constructor(
    private readonly chat: ChatService,
    private readonly ignoredParams: IgnoredParamsReport,
  ) {}

  @Post('responses')
  @Idempotent('/v1/responses')
  @UseGuards(AccountThrottlerGuard, JsonBodyGuard)
  @ApiRoute({
    tag: 'v1',
    summary: "OpenAI's Responses API (stateless) for chat models, optionally streamed as SSE events; billed as chat",
    auth: 'api_key',
    errors: [...CHAT_ERRORS, ErrorCode.UnsupportedParameter],
    body: { contentType: 'application/json', schema: createResponseBody },
    success: {
      status: 200,
      description: 'A Response object with usage, or its SSE events (response.created … response.completed)',
      content: { 'application/json': { type: 'object' }, 'text/event-stream': { type: 'string' } },
    },
  })
  async create(
    @Req() req: GatewayRequest,
    @Res() res: GatewayReply,
    @Metered() meter: UsageMeter,
    @Body(ResponsesRequestPipe) request: ResponsesRequest | ResponsesPassThroughRequest,
  ): Promise<void> {
    if ('passedThrough' in request) return this.passThrough(req, res, meter, request);
    const { chat, echo, toolShapes, ignored } = request;
    const call = chatCall('/v1/responses', req, res.raw, meter, chat);
    this.ignoredParams.report('/v1/responses', res.raw, ignored);
    const base = newResponseBase(chat.model.id, echo, toolShapes);
    if (chat.stream) return this.chat.stream(call, new ResponseEventStream(new SseWriter(res.raw), base));
    const answer = await this.chat.answer(call);
    if (answer.costUsd) res.raw.setHeader(COST_HEADER, answer.costUsd);
    res.code(200).send(responseFromCompletion(base, answer.body));
    await answer.charge();
  }

  /**
   * Passed through to `openai` upstreams (DESIGN.md section 12): OpenAI's own Response, or its events relayed, but for
   * `model` (the catalog id) and `usage.cost` (the charge).
   */
  private async passThrough(req: GatewayRequest, res: GatewayReply, meter: UsageMeter, { chat, ignored }: ResponsesPassThroughRequest): Promise<void> {
    const call = chatCall('/v1/responses', req, res.raw, meter, chat);
    this.ignoredParams.report('/v1/responses', res.raw, ignored);
    if (chat.stream) return this.chat.stream(call, new NativeResponseStream(new SseWriter(res.raw), chat.model.id));
    const answer = await this.chat.answer(call);
    if (answer.costUsd) res.raw.setHeader(COST_HEADER, answer.costUsd);
    const native = answer.body[NATIVE_ANSWER] ?? {};
    const cost = answer.body.usage?.cost;
    const usage = cost === undefined || !native.usage ? native.usage : { ...(native.usage as object), cost };
    res.code(200).send({ ...native, model: chat.model.id, usage });
    await answer.charge();
  }
}
