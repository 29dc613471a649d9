import { Body, Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import { AccountThrottlerGuard } from '../burst-limit/account-throttler.guard';
import { CHAT_ERRORS, chatCall, COST_HEADER } from '../chat/chat-call';
import { ChatService } from '../chat/chat.service';
import { IgnoredParamsReport } from '../chat/ignored-params';
import { refuseUnpricedBetas } from '../chat/price-options-check';
import { SseWriter } from '../chat/sse';
import { JsonBodyGuard } from '../common/guards/json-body.guard';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { ErrorCode } from '../errors';
import { AcceptsXApiKey } from '../keys/x-api-key.decorator';
import { ApiRoute } from '../openapi/api-route.decorator';
import { json } from '../openapi/schemas';
import { Metered } from '../usage/metered.decorator';
import { UsageMeter } from '../usage/usage-meter';
import { countTokensAnswer, countTokensBody, createMessageBody } from './dto/messages.schema';
import { MalformedToolArguments } from './malformed-tool-arguments';
import { NATIVE_ANSWER } from '../providers/chat-contract';
import { asGatewayError } from '../providers/upstream-failure';
import { UpstreamRouter } from '../routing/upstream-router';
import { PassThrough } from '../providers/upstream-provider';
import { abortOnClientClose } from '../common/http/client-abort';
import { emptyUsage, messageOfCompletion } from '../providers/anthropic/completion-to-message';
import type { MessagesRequestBody } from '../providers/anthropic/messages-wire';
import { messageUsage } from './message-usage';
import { MessageEventStream } from './message-event-stream';
import { promptTokens } from './message-tokens';
import { CountTokensRequest, CountTokensRequestPipe, MessagesRequest, MessagesRequestPipe } from './messages-request.pipe';
import { Idempotent } from '../idempotency/idempotent.decorator';

const ENVELOPE = 'Errors use Anthropic\'s envelope {"type": "error", "error": {type, message, code, param}}, type named after the status (docs/messages.md).';

/**
 * Anthropic's Messages API for the catalog's chat models, served by one chat completion: the same checks,
 * hold, upstream call and charge as chat. The key may come as x-api-key; anthropic-version and anthropic-beta are accepted.
 * What chat has no place for is accepted and named in x-gateway-ignored-params (docs/messages.md).
 */
@Controller('v1/messages')
@AcceptsXApiKey()
export class MessagesController {

  constructor(
    private readonly chat: ChatService,
    private readonly malformedToolArguments: MalformedToolArguments,
    private readonly ignoredParams: IgnoredParamsReport,
    private readonly upstreams: UpstreamRouter,
  ) {}

  @Post()
  @Idempotent('/v1/messages')
  @UseGuards(AccountThrottlerGuard, JsonBodyGuard)
  @ApiRoute({
    tag: 'v1',
    summary: `Anthropic's Messages API for chat models, optionally streamed as Anthropic's SSE events; billed as chat. Key as x-api-key or Bearer. ${ENVELOPE}`,
    auth: 'api_key',
    errors: [...CHAT_ERRORS, ErrorCode.UnsupportedParameter],
    body: { contentType: 'application/json', schema: createMessageBody },
    success: {
      status: 200,
      description: 'A Message with usage, or its SSE events (message_start … message_stop)',
      content: { 'application/json': { type: 'object' }, 'text/event-stream': { type: 'string' } },
    },
  })
  async create(@Req() req: GatewayRequest, @Res() res: GatewayReply, @Metered() meter: UsageMeter, @Body(MessagesRequestPipe) request: MessagesRequest): Promise<void> {
    const { chat, ignored } = request;
    // A beta that changes the price, such as fast mode's, is the body's options' kin: refused unless priced (DESIGN.md 12.2).
    refuseUnpricedBetas(chat.model, req.headers['anthropic-beta']);
    if (request.passThroughBody) chat.passThrough = passThroughOf(req, request.passThroughBody);
    const call = chatCall('/v1/messages', req, res.raw, meter, chat);
    this.ignoredParams.report('/v1/messages', res.raw, ignored);
    if (chat.stream) {
      const prompt = await promptTokens(chat.body.messages, chat.body.tools);
      const onMalformed = (calls: number) =>
        this.malformedToolArguments.report('/v1/messages', req.id, chat.model.id, calls, 'relayed as sent (streamed input_json_delta)');
      return this.chat.stream(call, new MessageEventStream(new SseWriter(res.raw), chat.model.id, prompt, onMalformed));
    }
    const answer = await this.chat.answer(call);
    if (answer.costUsd) res.raw.setHeader(COST_HEADER, answer.costUsd);
    const native = answer.body[NATIVE_ANSWER];
    if (native) {
      // Passed through: Anthropic's own message, relabelled with the catalog id, its usage with the charge.
      const cost = answer.body.usage?.cost;
      const usage = cost === undefined ? native.usage : { ...(native.usage as object), cost };
      res.code(200).send({ ...native, model: chat.model.id, usage });
      return answer.charge();
    }
    const { message, malformedToolCalls } = messageOfCompletion(chat.model.id, answer.body, messageUsage(answer.body.usage) ?? emptyUsage());
    res.code(200).send(message);
    this.malformedToolArguments.report('/v1/messages', req.id, chat.model.id, malformedToolCalls, 'answered with input {}');
    await answer.charge();
  }

  @Post('count_tokens')
  @HttpCode(200)
  @UseGuards(AccountThrottlerGuard, JsonBodyGuard)
  @ApiRoute({
    tag: 'v1',
    summary: `Counts the input tokens of a Messages request with the gateway's tokenizer: no upstream call, no charge. ${ENVELOPE}`,
    auth: 'api_key',
    errors: [ErrorCode.InvalidJson, ErrorCode.InvalidRequest, ErrorCode.MissingModel, ErrorCode.UnknownModel, ErrorCode.ModelNotHosted, ErrorCode.UnsupportedParameter, ErrorCode.NotFound, ErrorCode.PayloadTooLarge, ErrorCode.RateLimitExceeded],
    body: { contentType: 'application/json', schema: countTokensBody },
    success: { status: 200, description: 'The input tokens', content: json(countTokensAnswer) },
  })
  async countTokens(
    @Req() req: GatewayRequest,
    @Res({ passthrough: true }) res: GatewayReply,
    @Metered() meter: UsageMeter,
    @Body(CountTokensRequestPipe) request: CountTokensRequest,
  ): Promise<Record<string, unknown>> {
    meter.describe({ model: request.model.id, streamed: false });
    this.ignoredParams.report('/v1/messages/count_tokens', res.raw, request.ignored);
    const counted = () => promptTokens(request.messages, request.tools);
    if (!request.passThroughBody) return { input_tokens: await counted() };
    // Anthropic's own count of its own tokens (uncharged): the gateway's tokenizer is not Claude's. Through the
    // router, as every upstream call: the deployment that would serve the request counts (breaker, failover, metrics).
    try {
      return await this.upstreams.countTokens(request.model, { request: passThroughOf(req, request.passThroughBody), counted }, abortOnClientClose(res.raw), meter);
    } catch (err) {
      throw asGatewayError(err, 'model');
    }
  }
}

/** The client's Messages body and the anthropic-* headers an `anthropic` upstream must see (DESIGN.md section 11). */
function passThroughOf(req: GatewayRequest, body: MessagesRequestBody): PassThrough {
  const headers: Record<string, string> = {};
  for (const name of ['anthropic-version', 'anthropic-beta']) {
    const value = req.headers[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return { dialect: 'anthropic', body, headers };
}
