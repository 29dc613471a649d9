import { Injectable, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { BillingService, Reservation, TokenUsage } from '../billing/billing.service';
import { ErrorCode, GatewayError } from '../common/errors';
import { secondsSince } from '../common/elapsed';
import { abortOnClientClose, CLIENT_CLOSED_REQUEST } from '../common/http/client-abort';
import { GatewayRequest } from '../common/http/gateway-request';
import { MetricsService } from '../metrics/metrics.service';
import { ProviderRegistry } from '../providers/provider-registry';
import { UsageService } from '../usage/usage.service';
import { asGatewayError, UpstreamFailure, upstreamGatewayError } from '../providers/upstream-failure';
import { ChatRequestBody, UpstreamChatStream } from '../providers/upstream-provider';
import { ChatRequest } from './chat-request.pipe';
import { completionText, countedUsage, deltaText, promptTokenBound, upstreamUsage } from './chat-usage';
import { SseWriter } from './sse';

const ENDPOINT = '/v1/chat/completions';

/** A chat request after its hold, on its way to the upstream. */
interface UpstreamCall {
  req: GatewayRequest;
  res: Response;
  chat: ChatRequest;
  upstreamBody: ChatRequestBody;
  reservation: Reservation;
  signal: AbortSignal;
}

/** One chat completion: hold, upstream call, settlement (DESIGN.md sections 5 and 6). */
@Injectable()
export class ChatService {
  private readonly logger = new Logger(ChatService.name);

  constructor(
    private readonly billing: BillingService,
    private readonly providers: ProviderRegistry,
    private readonly metrics: MetricsService,
    private readonly usage: UsageService,
  ) {}

  async complete(req: GatewayRequest, res: Response, chat: ChatRequest): Promise<void> {
    if (req.usage) {
      req.usage.model = chat.model.id;
      req.usage.streamed = chat.stream;
    }
    const reservation = await this.billing.reserve({
      accountId: req.auth!.accountId,
      requestId: req.id,
      model: chat.model,
      promptTokens: promptTokenBound(chat.body, chat.model.context_window),
      requestedMaxTokens: chat.maxTokens,
      choices: chat.choices,
    });
    if (req.usage) req.usage.awaitingSettlement = true;
    const upstreamBody = this.upstreamBody(chat, reservation);
    try {
      // A client that goes away aborts the upstream request (socket closed, no more tokens produced).
      const call: UpstreamCall = { req, res, chat, upstreamBody, reservation, signal: abortOnClientClose(res) };
      if (chat.stream) await this.stream(call);
      else await this.json(call);
    } catch (err) {
      await this.releaseQuietly(reservation, req);
      throw err;
    }
  }

  private upstreamBody(chat: ChatRequest, reservation: Reservation): ChatRequestBody {
    const body: ChatRequestBody = { ...chat.body, model: chat.model.upstream_model };
    // The allowance was cut to what the account affords: the upstream must not produce more.
    if (reservation.capped) body.max_tokens = reservation.outputAllowance;
    if (chat.stream) {
      const options = typeof body.stream_options === 'object' && body.stream_options !== null ? body.stream_options : {};
      body.stream_options = { ...options, include_usage: true };
    }
    return body;
  }

  private async json({ req, res, chat, upstreamBody, reservation, signal }: UpstreamCall): Promise<void> {
    let answer: Record<string, unknown>;
    const startedAt = process.hrtime.bigint();
    try {
      answer = (await this.providers.forModel(chat.model).chat(chat.model, upstreamBody, signal)).body;
    } catch (err) {
      throw asGatewayError(err, 'model');
    } finally {
      this.metrics.observeUpstream(ENDPOINT, secondsSince(startedAt));
    }
    answer.model = chat.model.id;
    res.status(200).json(answer);
    // Counting a long answer takes a while (it yields to the event loop): the client does not wait for it.
    const usage = upstreamUsage(answer.usage) ?? (await countedUsage(chat.body.messages, completionText(answer)));
    this.billing.settleAfterResponse(reservation, req, usage, 200);
  }

  private async stream({ req, res, chat, upstreamBody, reservation, signal }: UpstreamCall): Promise<void> {
    let chunks: UpstreamChatStream;
    const startedAt = process.hrtime.bigint();
    try {
      chunks = await this.providers.forModel(chat.model).chatStream(chat.model, upstreamBody, signal);
    } catch (err) {
      this.metrics.observeUpstream(ENDPOINT, secondsSince(startedAt));
      throw asGatewayError(err, 'model');
    }
    const sse = new SseWriter(res);
    let produced = '';
    let usage: TokenUsage | null = null;
    this.metrics.streamOpened();
    try {
      for await (const chunk of chunks) {
        if (!sse.hasStarted) this.metrics.observeTimeToFirstByte(secondsSince(startedAt));
        if (chunk.usage !== undefined) {
          usage = upstreamUsage(chunk.usage) ?? usage;
          if (!chat.includeUsage) {
            delete chunk.usage;
            if (Array.isArray(chunk.choices) && chunk.choices.length === 0) continue;
          }
        }
        produced += deltaText(chunk);
        chunk.model = chat.model.id;
        await sse.send(chunk);
        if (signal.aborted) break;
      }
    } catch (err) {
      if (!signal.aborted) {
        if (!sse.hasStarted) throw asGatewayError(err, 'model');
        // Mid-stream failure: the status line is sent, so the error goes in-band and nothing is charged.
        const error = this.inBandError(err, req);
        if (req.usage) req.usage.errorCode = error.code;
        await this.releaseQuietly(reservation, req);
        sse.end(JSON.stringify(error.toBody()));
        return;
      }
    } finally {
      this.metrics.streamClosed();
      this.metrics.observeUpstream(ENDPOINT, secondsSince(startedAt));
    }
    // A client that left is charged for the prompt and what was produced until then.
    const status = signal.aborted ? CLIENT_CLOSED_REQUEST : 200;
    if (!signal.aborted) sse.end('[DONE]');
    this.billing.settleAfterResponse(reservation, req, usage ?? (await countedUsage(chat.body.messages, produced)), status);
  }

  private inBandError(err: unknown, req: GatewayRequest): GatewayError {
    if (err instanceof UpstreamFailure) return upstreamGatewayError(err, 'model');
    if (err instanceof GatewayError) return err;
    this.logger.error({ err, requestId: req.id }, `Stream of ${req.id} failed: ${(err as Error).message}`);
    return new GatewayError(ErrorCode.InternalError, `Internal error; quote request id ${req.id} when reporting it.`);
  }

  /** A failed request: its hold goes back uncharged, and its usage record says so. */
  private async releaseQuietly(reservation: Reservation, req: GatewayRequest): Promise<void> {
    try {
      await this.billing.release(reservation);
    } catch (err) {
      // The sweeper releases it once it expires.
      this.logger.error({ err, requestId: req.id }, `Could not release the hold of ${req.id}: ${(err as Error).message}`);
    }
    this.usage.settlementAbandoned(req);
  }
}
