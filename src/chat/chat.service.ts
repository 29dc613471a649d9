import { Injectable, Logger } from '@nestjs/common';
import { BillingService, KeyBudget, Reservation } from '../billing/billing.service';
import { RequestCost, requestCost } from '../billing/request-cost';
import { ErrorCode, GatewayError } from '../errors';
import { secondsSince } from '../common/elapsed';
import { microsToUsd, microsToUsdNumber } from '../common/money';
import { MetricsService } from '../metrics/metrics.service';
import { AnswerPriceFacts, ChatChunk, ChatCompletion, ChatUsage, NATIVE_EVENT, PARTIAL_USAGE } from '../providers/chat-contract';
import { leastOutputTokens } from '../providers/openai/openai-deployments';
import { asGatewayError, UpstreamFailure, upstreamGatewayError } from '../providers/upstream-failure';
import { countTextTokens } from '../providers/token-count';
import { ChatRequestBody, PASS_THROUGH, UpstreamChatStream } from '../providers/upstream-provider';
import { UpstreamRouter } from '../routing/upstream-router';
import { recordAnswer } from '../tracing/request-span';
import { UsageMeter } from '../usage/usage-meter';
import { HeaderSink, RateLimiter, RateSubject } from '../rate-limits/rate-limiter.service';
import { ChatRequest } from './chat-request.pipe';
import { answerPriceFacts } from './answer-price-facts';
import { completionText, countedUsage, deltaText, promptTokenBound } from './chat-usage';
import { ChatStreamSink } from './chat-stream-sink';

/** One chat request, as its controller hands it over. */
export interface ChatCall {
  /** The route served (`/v1/chat/completions`, `/v1/responses`), for the upstream latency metric. */
  endpoint: string;
  requestId: string;
  accountId: string;
  /** The API key's budget, and whether it has a monthly limit of its own (docs/billing.md, "Key limits"). */
  key?: KeyBudget;
  chat: ChatRequest;
  meter: UsageMeter;
  /** Fires when the client goes away: the upstream call stops, no more tokens are produced. */
  signal: AbortSignal;
  /** Who the request counts against for rpm and tpm, and where their headers go (src/rate-limits/). */
  rate?: { subject: RateSubject; header: HeaderSink };
}

/** A non-streamed answer, its hold still open: send `body`, then `charge` it. */
export interface ChatAnswer {
  body: ChatCompletion;
  /**
   * The charge in USD (six decimals), also in `body.usage.cost`, when the upstream reported usage; unset when the
   * gateway counts the tokens itself, which it does after the answer is sent (docs/billing.md, "Cost in the answer").
   */
  costUsd?: string;
  charge(): Promise<void>;
}

/** One chat completion: hold, upstream call, charge (DESIGN.md sections 5 and 6). */
@Injectable()
export class ChatService {
  private readonly logger = new Logger(ChatService.name);

  constructor(
    private readonly billing: BillingService,
    private readonly upstreams: UpstreamRouter,
    private readonly metrics: MetricsService,
    private readonly rateLimits: RateLimiter,
  ) {}

  async answer(call: ChatCall): Promise<ChatAnswer> {
    const reservation = await this.reserve(call);
    const startedAt = process.hrtime.bigint();
    try {
      const { body } = await this.upstreams.chat(call.chat.model, this.upstreamBody(call.chat, reservation), call.signal, call.meter);
      call.meter.describe({ responseId: body.id, responseModel: body.model });
      recordAnswer(() => body);
      body.model = call.chat.model.id;
      const facts = answerPriceFacts(body);
      const cost = this.cost(call, body.usage, facts);
      const costUsd = cost ? this.showCost(body.usage!, reservation, cost) : undefined;
      return { body, costUsd, charge: () => this.chargeAnswer(call, reservation, body, cost, facts) };
    } catch (err) {
      await this.releaseQuietly(reservation);
      throw asGatewayError(err, 'model');
    } finally {
      this.metrics.observeUpstream(call.endpoint, secondsSince(startedAt));
    }
  }

  async stream(call: ChatCall, sink: ChatStreamSink): Promise<void> {
    const reservation = await this.reserve(call);
    const { chat, signal } = call;
    let chunks: UpstreamChatStream;
    const startedAt = process.hrtime.bigint();
    try {
      chunks = await this.upstreams.chatStream(chat.model, this.upstreamBody(chat, reservation), signal, call.meter);
    } catch (err) {
      this.metrics.observeUpstream(call.endpoint, secondsSince(startedAt));
      await this.releaseQuietly(reservation);
      throw asGatewayError(err, 'model');
    }
    let produced = '';
    let cost: RequestCost | null = null;
    let partial: ChatUsage | undefined;
    let facts: AnswerPriceFacts | undefined;
    this.metrics.streamOpened();
    try {
      for await (const chunk of chunks) {
        if (!sink.hasStarted) this.metrics.observeTimeToFirstByte(secondsSince(startedAt));
        partial = chunk[PARTIAL_USAGE] ?? partial;
        facts = answerPriceFacts(chunk, facts);
        if (!chat.passThrough && isNativeOnly(chunk)) continue;
        if (chunk.usage !== undefined) {
          const reported = this.cost(call, chunk.usage, facts);
          if (reported) this.showCost(chunk.usage!, reservation, reported);
          cost = reported ?? cost;
          if (!chat.includeUsage) {
            delete chunk.usage;
            if (Array.isArray(chunk.choices) && chunk.choices.length === 0) continue;
          }
        }
        produced += deltaText(chunk);
        if (!sink.hasStarted) call.meter.describe({ responseId: chunk.id, responseModel: chunk.model });
        chunk.model = chat.model.id;
        const backpressure = sink.send(chunk);
        if (backpressure) await backpressure;
        if (signal.aborted) break;
      }
    } catch (err) {
      if (!signal.aborted) {
        await this.releaseQuietly(reservation);
        if (!sink.hasStarted) throw asGatewayError(err, 'model');
        // Mid-stream failure: the status line is sent, so the error goes in-band and nothing is charged.
        const error = this.inBandError(err, call.requestId);
        call.meter.failed(error.code);
        sink.fail(error);
        return;
      }
    } finally {
      this.metrics.streamClosed();
      this.metrics.observeUpstream(call.endpoint, secondsSince(startedAt));
    }
    // A client that left is charged for the prompt and what was produced until then: the input the upstream
    // reported so far by class (partial usage), else the gateway's own count.
    if (!signal.aborted) sink.finish();
    recordAnswer(() => ({ choices: [{ message: { role: 'assistant', content: produced } }] }));
    this.charge(
      call,
      reservation,
      cost ?? (partial && (await this.partialCost(reservation, call, partial, produced, facts))) ?? (await this.counted(reservation, call, produced, facts)),
    );
  }

  /**
   * The one cost function (request-cost.ts) on a usage block, under the options the request asked for and what
   * the answer reported (DESIGN.md section 12.2). What the answer reported that the entry does not price is
   * charged as standard, logged at warn and counted.
   */
  private cost({ chat, requestId }: ChatCall, usage: unknown, answered: AnswerPriceFacts | undefined): RequestCost | null {
    const cost = requestCost(usage, chat.model, { asked: chat.priceOptions, answered });
    if (cost && cost.unpriced.length > 0) {
      for (const reason of cost.unpriced) this.metrics.answerUnpriced(chat.model.id, reason);
      this.logger.warn({ requestId, model: chat.model.id, unpriced: cost.unpriced }, `The answer to ${requestId} reported ${cost.unpriced.join(', ')}, which ${chat.model.id} does not price: charged at standard prices.`);
    }
    return cost;
  }

  /** A stream cut after the upstream reported its input: that usage, its output at least the gateway's count of what was produced. */
  private async partialCost(reservation: Reservation, call: ChatCall, usage: ChatUsage, produced: string, facts: AnswerPriceFacts | undefined): Promise<RequestCost | null> {
    try {
      const reported = typeof usage.completion_tokens === 'number' ? usage.completion_tokens : 0;
      const completion = Math.max(reported, await countTextTokens(produced));
      const prompt = typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : 0;
      return this.cost(call, { ...usage, completion_tokens: completion, total_tokens: prompt + completion }, facts);
    } catch (err) {
      await this.releaseQuietly(reservation);
      throw err;
    }
  }

  private async reserve({ accountId, requestId, key, chat, rate }: ChatCall): Promise<Reservation> {
    const promptTokens = promptTokenBound(chat.passThrough?.body ?? chat.body, chat.model.context_window);
    // rpm and tpm (DESIGN.md 12.4), after the body's checks, before the hold: the tokens held are the hold's own
    // bound (the prompt's, and the output limit of every choice), trued up at settlement, given back on failure.
    const output = (chat.maxTokens ?? chat.model.max_output_tokens ?? 1) * chat.choices;
    const tokens = rate ? await this.rateLimits.admit(rate.subject, promptTokens + output, rate.header) : null;
    try {
      return await this.billing.reserve({
        accountId,
        requestId,
        key,
        model: chat.model,
        promptTokens,
        requestedMaxTokens: chat.maxTokens,
        limitParam: chat.maxTokensParam,
        minOutputTokens: leastOutputTokens(chat.model, chat.passThrough),
        choices: chat.choices,
        priceOptions: chat.priceOptions,
        serverTools: chat.serverTools,
        tokens: tokens ?? undefined,
      });
    } catch (err) {
      tokens?.settle(0);
      throw err;
    }
  }

  private upstreamBody(chat: ChatRequest, reservation: Reservation): ChatRequestBody {
    const body: ChatRequestBody = { ...chat.body, model: chat.model.upstream_model };
    if (chat.passThrough) body[PASS_THROUGH] = chat.passThrough;
    // The allowance was cut to what the account affords: the upstream must not produce more. In OpenAI's
    // current field: its reasoning models refuse max_tokens (a provider's output_limit_field renames it).
    if (reservation.capped) body.max_completion_tokens = reservation.outputAllowance;
    if (chat.stream) {
      const options = typeof body.stream_options === 'object' && body.stream_options !== null ? body.stream_options : {};
      body.stream_options = { ...options, include_usage: true };
    }
    return body;
  }

  /** After the answer was sent: counting a long one takes a while (it yields to the event loop), and the client does not wait for it. */
  private async chargeAnswer(call: ChatCall, reservation: Reservation, body: ChatCompletion, reported: RequestCost | null, facts: AnswerPriceFacts | undefined): Promise<void> {
    const cost = reported ?? (await this.counted(reservation, call, completionText(body), facts));
    this.charge(call, reservation, cost);
  }

  /** The charge this cost will make, written into the usage block the client gets (`usage.cost`, USD); returned as six-decimal text. */
  private showCost(usage: ChatUsage, reservation: Reservation, cost: RequestCost): string {
    const charged = this.billing.chargeFor(reservation, cost.micros);
    usage.cost = microsToUsdNumber(charged);
    return microsToUsd(charged);
  }

  /** The meter writes the request's record with its charge, in the settlement's transaction, once the response has closed. */
  private charge({ meter }: ChatCall, reservation: Reservation, cost: RequestCost): void {
    meter.charged(cost.usage, (record) => this.billing.settle(reservation, cost.micros, record, true), cost);
  }

  /**
   * The cost of the gateway's own count, for an upstream that reported no usage (or a stream the client
   * left): priced by the same function as a reported one. Should counting fail, the hold goes back.
   */
  private async counted(reservation: Reservation, call: ChatCall, produced: string, facts: AnswerPriceFacts | undefined): Promise<RequestCost> {
    try {
      // A count is always a valid pair of totals (countedUsage caps it), so it always has a cost.
      return this.cost(call, await countedUsage(call.chat.body, produced), facts)!;
    } catch (err) {
      await this.releaseQuietly(reservation);
      throw err;
    }
  }

  private inBandError(err: unknown, requestId: string): GatewayError {
    if (err instanceof UpstreamFailure) return upstreamGatewayError(err, 'model');
    if (err instanceof GatewayError) return err;
    this.logger.error({ err, requestId }, `Stream of ${requestId} failed: ${(err as Error).message}`);
    return new GatewayError(ErrorCode.InternalError, `Internal error; quote request id ${requestId} when reporting it.`);
  }

  /** A failed request: its hold goes back uncharged (its usage record, without a charge, says so). */
  private async releaseQuietly(reservation: Reservation): Promise<void> {
    try {
      await this.billing.release(reservation);
    } catch (err) {
      // The sweeper releases it once it expires.
      this.logger.error({ err, requestId: reservation.requestId }, `Could not release the hold of ${reservation.requestId}: ${(err as Error).message}`);
    }
  }
}

/** A chunk that only carries a native upstream event (ping, a block's start or stop): nothing for a chat client. */
function isNativeOnly(chunk: ChatChunk): boolean {
  return chunk[NATIVE_EVENT] !== undefined && chunk.usage === undefined && (!Array.isArray(chunk.choices) || chunk.choices.length === 0);
}
