import type { ServerResponse } from 'node:http';
import { CLIENT_CLOSED_REQUEST } from '../common/http/client-abort';
import { AuthContext, GatewayRequest } from '../common/http/gateway-request';
import { pathOf } from '../common/http/url-path';
import { storableText } from '../common/storable-text';
import { MAX_RECORDED_MODEL_LENGTH, NO_TOKENS, PricedAs, TokenUsage, ToolUse, UsageRecordValues } from './usage-record';

/** Writes a request's record together with its charge (billing's settlement); resolves to the charge. */
export type ChargeWriter = (record: UsageRecordValues) => Promise<bigint>;

/** Where a meter's record goes: UsageRecords. */
export interface UsageRecordSink {
  /** Writes the record with cost 0. */
  writeUncharged(record: UsageRecordValues): void;
  /** Writes the record through the charge; should the charge fail (not lost), writes it uncharged. */
  writeCharged(record: UsageRecordValues, charge: ChargeWriter): void;
}

/** Told of a request's record once its write is under way, with the cost charged in µUSD (0: uncharged): its trace span. */
export type RecordListener = (record: UsageRecordValues, costMicros: bigint) => void;

/** The model a record names for a request that `servedId` served and whose body asked for `requested` (CatalogService). */
export interface RecordedModel {
  recordedModel(servedId: string, requested: unknown): string;
}

/** The request a meter records: authenticated, with its id. */
export type MeteredRequest = Pick<GatewayRequest, 'id' | 'url' | 'body'> & { auth: AuthContext; routeOptions?: { url?: unknown } };

/** What a request was for, as its handler describes it. */
export interface ServedRequest {
  model?: string;
  streamed?: boolean;
  /** Speech: the characters of the input. */
  inputChars?: number;
  /** Transcription: the seconds of audio transcribed. */
  audioSeconds?: number;
  /** The deployment (`provider/upstream_model`) that served or last failed it (src/routing/). */
  deployment?: string;
  /** Upstream attempts it took. */
  attempts?: number;
  /** The answer's id and model as the upstream sent them (the request's trace span names them). */
  responseId?: string;
  responseModel?: string;
}

/**
 * The usage record of one authenticated request, and its only writer. The handler, the exception filter
 * and billing report what they know as plain values; the record is written exactly once, when both the
 * response has ended or closed (which gives the status) and the handler is done (nothing more will be reported).
 * A request that holds credits is written by its charge, in the settlement's own transaction.
 */
export class UsageMeter {
  private model: string | null = null;
  private streamed = false;
  private inputChars = 0;
  private audioSeconds = 0;
  private deployment: string | null = null;
  private attempts: number | null = null;
  private responseId: string | null = null;
  private responseModel: string | null = null;
  private recordListener: RecordListener | null = null;
  private tokens: TokenUsage = NO_TOKENS;
  private pricedAs: PricedAs | null = null;
  private errorCode: string | null = null;
  private charge: ChargeWriter | null = null;
  private status: number | null = null;
  private handlerDone = false;
  private written = false;

  constructor(
    private readonly sink: UsageRecordSink,
    private readonly request: MeteredRequest,
    private readonly res: ServerResponse,
    private readonly startedAt = process.hrtime.bigint(),
    private readonly models: RecordedModel = { recordedModel: (servedId) => servedId },
  ) {
    res.once('close', () => {
      // Closed before the response was complete and with no error of ours: the client went away.
      const clientLeft = !res.headersSent || (!res.writableFinished && this.errorCode === null);
      this.status = clientLeft ? CLIENT_CLOSED_REQUEST : res.statusCode;
      this.writeWhenComplete();
    });
  }

  /** The id of the request recorded (for the log lines of those the meter is handed to). */
  get requestId(): string {
    return this.request.id;
  }

  /** `model`: the catalog id of the entry that serves (the record names it as the client did: see RecordedModel). */
  describe(served: ServedRequest): void {
    if (served.model !== undefined) this.model = served.model;
    if (served.streamed !== undefined) this.streamed = served.streamed;
    if (served.inputChars !== undefined) this.inputChars = served.inputChars;
    if (served.audioSeconds !== undefined) this.audioSeconds = served.audioSeconds;
    if (served.deployment !== undefined) this.deployment = served.deployment;
    if (served.attempts !== undefined) this.attempts = served.attempts;
    if (served.responseId !== undefined) this.responseId = served.responseId;
    if (served.responseModel !== undefined) this.responseModel = served.responseModel;
  }

  /** The answer's id and model as the upstream sent them; null until known. */
  get answer(): { id: string | null; model: string | null } {
    return { id: this.responseId, model: this.responseModel };
  }

  /** `listener` is told of the record once it is complete, with its charge (src/usage/request-span.interceptor.ts). */
  whenRecorded(listener: RecordListener): void {
    this.recordListener = listener;
  }

  /** What the handler described and whether it failed, so far (the Idempotency-Key's record of a first answer). */
  get served(): { model: string | null; streamed: boolean; errorCode: string | null } {
    return { model: this.model, streamed: this.streamed, errorCode: this.errorCode };
  }

  /** The error the request was answered with (in the status line, or in-band in a started stream). */
  failed(code: string): void {
    this.errorCode = code;
  }

  /** The request used these tokens (by class); its record is written by `charge`, with what it charged. */
  charged(tokens: TokenUsage, charge: ChargeWriter, pricedAs: PricedAs | null = null): void {
    this.tokens = tokens;
    this.pricedAs = pricedAs;
    this.charge = charge;
  }

  /** The handler has returned or thrown (or never ran: the request was refused before it). */
  handled(): void {
    this.handlerDone = true;
    this.writeWhenComplete();
  }

  private writeWhenComplete(): void {
    // A response the handler has ended has its status already: its charge goes out now, not after the
    // flush, so that the client's next request (on any replica) finds it committed as before.
    const status = this.status ?? (this.res.writableEnded ? this.res.statusCode : null);
    if (!this.handlerDone || status === null || this.written) return;
    this.written = true;
    const record = this.record(status);
    const listener = this.recordListener;
    if (this.charge) {
      this.sink.writeCharged(record, listener ? toldOfCharge(this.charge, listener) : this.charge);
    } else {
      this.sink.writeUncharged(record);
      if (listener) tellQuietly(listener, record, 0n);
    }
  }

  private record(status: number): UsageRecordValues {
    const { request } = this;
    // The model as requested: an alias of the entry that served stays the alias. A request refused before its
    // handler named the model (validation errors) records it as sent, made storable: PostgreSQL refuses NUL
    // and lone surrogates, and the whole record with them.
    const requested = (request.body as { model?: unknown } | undefined)?.model;
    const model =
      this.model !== null
        ? this.models.recordedModel(this.model, requested)
        : typeof requested === 'string'
          ? storableText(requested, MAX_RECORDED_MODEL_LENGTH)
          : null;
    return {
      request_id: request.id,
      account_id: request.auth.accountId,
      key_id: request.auth.keyId,
      model,
      endpoint: endpointOf(request),
      status,
      error_code: this.errorCode,
      prompt_tokens: this.tokens.promptTokens,
      completion_tokens: this.tokens.completionTokens,
      cached_tokens: this.tokens.cachedTokens,
      cache_write_tokens: this.tokens.cacheWriteTokens,
      cache_write_1h_tokens: this.tokens.cacheWrite1hTokens,
      reasoning_tokens: this.tokens.reasoningTokens,
      audio_input_tokens: this.tokens.audioInputTokens,
      audio_output_tokens: this.tokens.audioOutputTokens,
      audio_seconds: this.audioSeconds.toFixed(3),
      input_chars: this.inputChars,
      latency_ms: Number((process.hrtime.bigint() - this.startedAt) / 1_000_000n),
      streamed: this.streamed,
      deployment: this.deployment,
      attempts: this.attempts,
      ...pricedColumns(this.pricedAs),
    };
  }
}

/** The charge, telling `listener` what it charged (0 when it failed: the record is then written uncharged). */
function toldOfCharge(charge: ChargeWriter, listener: RecordListener): ChargeWriter {
  return (record) =>
    charge(record).then(
      (micros) => {
        tellQuietly(listener, record, micros);
        return micros;
      },
      (err: unknown) => {
        tellQuietly(listener, record, 0n);
        throw err;
      },
    );
}

function tellQuietly(listener: RecordListener, record: UsageRecordValues, micros: bigint): void {
  try {
    listener(record, micros);
  } catch {
    // After the charge committed: a listener's failure (a span that could not end) must not pass for the charge's.
  }
}

/** Longest endpoint recorded for a path that matched no route (it is the client's text). */
const MAX_UNROUTED_ENDPOINT_LENGTH = 128;

/**
 * The route the request matched, its parameters named (`/v1/models/{id}`), so that one endpoint is one
 * row however many ids are asked for; the path itself, bounded, when no route matched.
 */
function endpointOf(request: MeteredRequest): string {
  const route = request.routeOptions?.url;
  if (typeof route !== 'string') return storableText(pathOf(request.url), MAX_UNROUTED_ENDPOINT_LENGTH);
  let endpoint = ENDPOINTS.get(route);
  if (endpoint === undefined) {
    // Fastify's wildcard is the rest of the path: on the one route that has it, the model id.
    endpoint = route.replace(/:(\w+)/g, '{$1}').replace(/\/\*$/, '/{id}');
    ENDPOINTS.set(route, endpoint);
  }
  return endpoint;
}

/** Each route's endpoint, worked out once: the routes are the app's own, a few dozen. */
const ENDPOINTS = new Map<string, string>();

/** The record's price_variants and tool_uses: null when the flat prices applied and no server tool ran. */
function pricedColumns(pricedAs: PricedAs | null): Pick<UsageRecordValues, 'price_variants' | 'tool_uses'> {
  if (!pricedAs) return { price_variants: null, tool_uses: null };
  const tools: Record<string, ToolUse> = {};
  for (const { name, uses, micros } of pricedAs.tools) tools[name] = { uses, micros: micros.toString() };
  return { price_variants: pricedAs.variants.length > 0 ? pricedAs.variants : null, tool_uses: pricedAs.tools.length > 0 ? tools : null };
}
