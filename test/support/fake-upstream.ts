import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { mixSeed, SSE_BASE_SEED, SseFraming, SseWriter } from './sse-framing';

/**
 * A fake OpenAI-compatible upstream over real HTTP on 127.0.0.1 (base URL `fake.url`, ending in /v1):
 * chat completions (JSON and SSE), transcriptions (multipart, verbose_json) and speech (streamed audio),
 * with failure modes, and a record of every request it received and whether its client gave up on it.
 */

export type FailureMode =
  | 'status4xx' // 400 with an OpenAI error body carrying `failureMessage`
  | 'status500'
  | 'status429' // 429 with OpenAI's body of the `rateLimit` kind, and `Retry-After: retryAfterS` when that is set
  | 'malformedJson' // 200 with a body that does not parse
  | 'reset' // the socket is destroyed before any answer
  | 'hang' // never answers
  | 'midStreamFailure' // part of the answer, then the socket is destroyed
  | 'slowChunks' // a normal answer with `slowChunkDelayMs` between chunks
  // Malformed streams (DESIGN.md section 9). "After N events" below is `faultAfterEvents`, or the mode's default.
  | 'notSse' // 200 text/event-stream whose body is garbage lines with no `data:` line, then the end
  | 'invalidJsonData' // a `data:` line that is not JSON after N events (default 0); the stream then goes on normally
  | 'truncatedChunked' // N events (default 2), then the connection ends cleanly without the terminating chunk
  | 'resetMidStream' // N events (default 2), then a TCP reset (RST); speech: half the audio, then a reset
  | 'wrongContentType' // 200 text/html (an HTML page) for any request
  | 'endlessLine'; // N events (default 0), then bytes with no newline until the client goes away (cap: `endlessLineMaxBytes`)

/**
 * OpenAI's answer (400) to `max_tokens` sent to one of its reasoning models, word for word. Documented: "max_tokens
 * … is not compatible with o-series models" and max_completion_tokens replaces it
 * (https://platform.openai.com/docs/api-reference/chat/create#chat-create-max_tokens,
 * https://platform.openai.com/docs/guides/reasoning); the body as OpenAI sends it, quoted in client issues
 * (e.g. github.com/microsoft/vscode-copilot-release/issues/8065).
 */
export const REASONING_MAX_TOKENS_ERROR = {
  error: {
    message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
    type: 'invalid_request_error',
    param: 'max_tokens',
    code: 'unsupported_parameter',
  },
};

/** Good events sent before a malformed stream's fault when `faultAfterEvents` is null. */
const DEFAULT_FAULT_AFTER: Partial<Record<FailureMode, number>> = { invalidJsonData: 0, truncatedChunked: 2, resetMidStream: 2, endlessLine: 0 };
const ENDLESS_CHUNK = 'x'.repeat(64 * 1024);

/**
 * OpenAI's 429 bodies (https://platform.openai.com/docs/guides/error-codes): a rate limit on requests or on tokens
 * (type `requests` / `tokens`, code `rate_limit_exceeded`), or a quota spent (type and code `insufficient_quota`:
 * the organisation's credits or spending limit, not a rate; retrying does not help).
 */
export type RateLimitKind = 'requests' | 'tokens' | 'insufficient_quota';
const RATE_LIMIT_BODIES: Record<RateLimitKind, { message: string; type: RateLimitKind; param: null; code: string }> = {
  requests: {
    message: 'Rate limit reached for gpt-4o-mini in organization org-fake on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/rate-limits to learn more.',
    type: 'requests',
    param: null,
    code: 'rate_limit_exceeded',
  },
  tokens: {
    message: 'Rate limit reached for gpt-4o-mini in organization org-fake on tokens per min (TPM): Limit 30000, Used 28000, Requested 3082. Please try again in 2.164s. Visit https://platform.openai.com/account/rate-limits to learn more.',
    type: 'tokens',
    param: null,
    code: 'rate_limit_exceeded',
  },
  insufficient_quota: {
    message: 'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.',
    type: 'insufficient_quota',
    param: null,
    code: 'insufficient_quota',
  },
};

/**
 * OpenAI's 401 bodies (https://platform.openai.com/docs/guides/error-codes, "401 - Incorrect API key provided"): a
 * wrong key is quoted back masked, its first characters and its last four kept, as OpenAI does.
 */
export function openAiUnauthorized(sent: string | undefined): { error: { message: string; type: string; param: null; code: string | null } } {
  if (!sent) {
    const message = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the basic auth username and password if you're accessing the API from your browser. You can obtain an API key from https://platform.openai.com/account/api-keys.";
    return { error: { message, type: 'invalid_request_error', param: null, code: null } };
  }
  const masked = `${sent.slice(0, 8)}${'*'.repeat(Math.max(0, sent.length - 12))}${sent.slice(-4)}`;
  const message = `Incorrect API key provided: ${masked}. You can find your API key at https://platform.openai.com/account/api-keys.`;
  return { error: { message, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } };
}

export interface FakeReply {
  content: string;
  promptTokens: number;
  completionTokens: number;
  /** Function calls instead of text (finish_reason tool_calls); streamed as a name delta, then the arguments in `argumentPieces` pieces. */
  toolCalls?: { id: string; name: string; arguments: string }[];
  /** How many deltas a streamed tool call's arguments come in (default 2). */
  argumentPieces?: number;
  /**
   * The usage block's details, in JSON answers and in the stream's usage chunk: OpenAI's
   * `prompt_tokens_details` ({cached_tokens: 0, audio_tokens: 0}) and `completion_tokens_details`
   * ({reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0}), each
   * given field over those zeros and sent as given (OpenRouter's `cache_write_tokens`; strings, negative
   * numbers, subtotals over their total; `undefined` leaves a field out). Unset: the totals only.
   */
  usageDetails?: { prompt?: Record<string, unknown>; completion?: Record<string, unknown> };
  /** No usage at all: none in a JSON answer, no usage chunk in a stream (the gateway then counts the tokens itself). */
  omitUsage?: boolean;
  /** The content is a refusal (the `refusal` field, content null); streamed word by word as refusal deltas. */
  refusal?: boolean;
  /** vLLM's `choices[].stop_reason` beside finish_reason "stop": the stop string that ended the answer. */
  stopReason?: string;
}

export interface RecordedFile {
  filename: string;
  type: string;
  size: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body (chat, speech); undefined for multipart or unparseable bodies. */
  body: any;
  /** Multipart text fields (transcriptions). */
  fields: Record<string, string>;
  file?: RecordedFile;
  /** The client closed the connection before the answer was complete. */
  aborted: boolean;
  /** The whole answer was written. */
  finished: boolean;
}

export interface FakeTranscription {
  text: string;
  language: string;
  duration: number;
  segments: Record<string, unknown>[];
}

const SPEECH_CONTENT_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** Fakes started in this test file so far: fake k's framings are seeded from (SSE_BASE_SEED, k). */
let fakesStarted = 0;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A pause between chunks that ends early when the client goes away, so that no timer outlives a closed answer. */
function pause(res: ServerResponse, ms: number): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.once('close', done);
  });
}

export class FakeUpstream {
  /** e.g. http://127.0.0.1:41234/v1 */
  url = '';
  reply: FakeReply = FakeUpstream.defaultReply();
  transcription: FakeTranscription = FakeUpstream.defaultTranscription();
  speechAudio: Buffer = Buffer.from('ID3fake-audio-bytes-'.repeat(64));
  /** Waited before the answer starts (makes concurrent requests overlap). */
  responseDelayMs = 0;
  /** Waited between SSE chunks and between audio chunks. */
  chunkDelayMs = 0;
  slowChunkDelayMs = 1000;
  failureMessage = 'The fake upstream rejected this request.';
  /** Seconds sent as Retry-After by `status429` (none when null). */
  retryAfterS: number | null = null;
  /** Which of OpenAI's 429 bodies `status429` sends. */
  rateLimit: RateLimitKind = 'requests';
  /** The only key accepted (`Authorization: Bearer`), else OpenAI's 401 (openAiUnauthorized); null: any key, or none. */
  apiKey: string | null = null;
  /** Good SSE events before a malformed stream's fault; null: the mode's default (see FailureMode). */
  faultAfterEvents: number | null = null;
  /** `endlessLine` stops (and ends the socket) after this many bytes if its client never gives up. */
  endlessLineMaxBytes = 256 * 1024 * 1024;
  /** Bytes of the endless line written so far (all requests since the last resetState). */
  endlessBytesSent = 0;
  /** A mode applied to every request until cleared; `failNext` takes precedence. */
  failure: FailureMode | null = null;
  /** A mode for every request whose JSON body names this (upstream) model: faults that concurrent requests do not share. */
  failureByModel: Record<string, FailureMode> = {};
  /**
   * Upstream models that behave as OpenAI's reasoning models (o-series, GPT-5 family) do with the output limit:
   * a chat request carrying `max_tokens` gets OpenAI's 400 (REASONING_MAX_TOKENS_ERROR); `max_completion_tokens` is served.
   */
  reasoningModels = new Set<string>();
  readonly requests: RecordedRequest[] = [];
  /** How SSE answers are cut into writes (test/support/sse-framing.ts): random by default; `exact` for a test that needs one write per event. */
  sseFraming: SseFraming = 'random';
  private readonly sseSeed = mixSeed(SSE_BASE_SEED, ++fakesStarted);
  /** TCP connections accepted so far (a keep-alive client reuses its connections). */
  connectionsOpened = 0;
  private readonly queued: FailureMode[] = [];
  private server!: Server;

  static defaultReply(): FakeReply {
    return { content: 'Hello from the fake upstream.', promptTokens: 12, completionTokens: 5 };
  }

  static defaultTranscription(): FakeTranscription {
    return {
      text: 'Hello world.',
      language: 'english',
      duration: 1.5,
      segments: [{ id: 0, seek: 0, start: 0, end: 1.5, text: ' Hello world.', tokens: [50364, 2425, 1002, 13], temperature: 0, avg_logprob: -0.2, compression_ratio: 0.8, no_speech_prob: 0.01 }],
    };
  }

  /** The next `times` requests fail with `mode`, then normal answers resume. */
  failNext(mode: FailureMode, times = 1): void {
    for (let i = 0; i < times; i++) this.queued.push(mode);
  }

  /** Back to normal answers and default replies, with an empty record. */
  resetState(): void {
    this.requests.length = 0;
    this.queued.length = 0;
    this.failure = null;
    this.failureByModel = {};
    this.reasoningModels.clear();
    this.reply = FakeUpstream.defaultReply();
    this.transcription = FakeUpstream.defaultTranscription();
    this.responseDelayMs = 0;
    this.chunkDelayMs = 0;
    this.faultAfterEvents = null;
    this.endlessBytesSent = 0;
    this.failureMessage = 'The fake upstream rejected this request.';
    this.retryAfterS = null;
    this.rateLimit = 'requests';
    this.apiKey = null;
    this.sseFraming = 'random';
  }

  aborted(): RecordedRequest[] {
    return this.requests.filter((r) => r.aborted);
  }

  /** Resolves once `predicate` holds (polled), or throws after `timeoutMs`. */
  async waitFor(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error('fake upstream: condition not met in time');
      await sleep(10);
    }
  }

  async start(port = 0): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy());
    });
    this.server.keepAliveTimeout = 60_000;
    this.server.on('connection', () => this.connectionsOpened++);
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
    return this;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readAll(req);
    if (req.url?.startsWith('/_fake/')) return this.control(req.url, raw, res);
    const record: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: undefined, fields: {}, aborted: false, finished: false };
    await this.parseInto(record, raw);
    this.requests.push(record);
    let destroyedByUs = false;
    res.on('close', () => {
      record.finished = res.writableFinished;
      if (!res.writableFinished && !destroyedByUs) record.aborted = true;
    });
    const destroy = () => {
      destroyedByUs = true;
      req.socket.destroy();
    };

    const mode = this.failureByModel[String(record.body?.model)] ?? this.queued.shift() ?? this.failure;
    if (mode === 'hang') return;
    if (mode === 'reset') return destroy();
    if (this.responseDelayMs) await sleep(this.responseDelayMs);
    if (res.destroyed) return;
    const bearer = /^Bearer (.+)$/i.exec(String(req.headers.authorization ?? ''))?.[1];
    if (this.apiKey !== null && bearer !== this.apiKey) return sendJson(res, 401, openAiUnauthorized(bearer));
    if (mode === 'status4xx') {
      return sendJson(res, 400, { error: { message: this.failureMessage, type: 'invalid_request_error', param: null, code: 'fake_rejection' } });
    }
    if (mode === 'status500') {
      return sendJson(res, 500, { error: { message: 'The fake upstream had an internal error.', type: 'server_error', param: null, code: null } });
    }
    if (mode === 'status429') {
      if (this.retryAfterS !== null) res.setHeader('retry-after', String(this.retryAfterS));
      return sendJson(res, 429, { error: RATE_LIMIT_BODIES[this.rateLimit] });
    }
    if (record.path === '/v1/chat/completions' && this.reasoningModels.has(String(record.body?.model)) && record.body.max_tokens !== undefined) {
      return sendJson(res, 400, REASONING_MAX_TOKENS_ERROR);
    }
    if (mode === 'wrongContentType') {
      return sendRaw(res, 200, 'text/html; charset=utf-8', '<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>\n');
    }
    const reset = () => {
      destroyedByUs = true;
      req.socket.resetAndDestroy();
    };
    // Ends the TCP connection once what was written is flushed, without the chunked body's terminating chunk.
    const truncate = () => {
      destroyedByUs = true;
      req.socket.end();
    };
    const ctx: AnswerContext = { res, mode, destroy, reset, truncate, delay: mode === 'slowChunks' ? this.slowChunkDelayMs : this.chunkDelayMs };

    if (req.method === 'POST' && record.path === '/v1/chat/completions' && record.body) return this.answerChat(record.body, ctx);
    if (req.method === 'POST' && record.path === '/v1/audio/transcriptions') return this.answerTranscription(record, ctx);
    if (req.method === 'POST' && record.path === '/v1/audio/speech' && record.body) return this.answerSpeech(record.body, ctx);
    sendJson(res, 404, { error: { message: `fake upstream: no route ${req.method} ${record.path}`, type: 'invalid_request_error', param: null, code: null } });
  }

  private async parseInto(record: RecordedRequest, raw: Buffer): Promise<void> {
    const contentType = String(record.headers['content-type'] ?? '');
    if (contentType.startsWith('multipart/form-data')) {
      const form = await new Response(raw, { headers: { 'content-type': contentType } }).formData().catch(() => null);
      for (const [name, value] of form ?? []) {
        if (typeof value === 'string') record.fields[name] = value;
        else record.file = { filename: value.name, type: value.type, size: value.size };
      }
      return;
    }
    try {
      record.body = JSON.parse(raw.toString('utf8'));
    } catch {
      record.body = undefined;
    }
  }

  private async answerChat(body: any, ctx: AnswerContext): Promise<void> {
    const { res, mode } = ctx;
    const completion = this.completionFor(body);
    const calls = this.reply.toolCalls;
    const base = { id: `chatcmpl-fake${this.requests.length}`, created: Math.floor(Date.now() / 1000), model: String(body.model) };
    // `n` choices, each the same reply, and OpenAI bills every one: the usage counts n × its completion tokens.
    const n = typeof body.n === 'number' && body.n >= 1 ? body.n : 1;
    const usage = this.usageBlock(completion.tokens * n);
    const finishReason = calls ? 'tool_calls' : completion.finishReason;
    const stopReason = this.reply.stopReason !== undefined && finishReason === 'stop' ? { stop_reason: this.reply.stopReason } : {};

    if (body.stream !== true) {
      if (mode === 'malformedJson' || mode === 'invalidJsonData' || mode === 'notSse') {
        return sendRaw(res, 200, 'application/json', '{"id": "chatcmpl-broken", "choices": [');
      }
      if (mode === 'endlessLine') {
        res.writeHead(200, { 'content-type': 'application/json' });
        await write(res, '{"id": "chatcmpl-endless", "filler": "');
        return this.writeEndless(res);
      }
      const answer = {
        ...base,
        object: 'chat.completion',
        choices: Array.from({ length: n }, (_, index) => ({ index, message: this.replyMessage(completion.text), logprobs: null, finish_reason: finishReason, ...stopReason })),
        ...(this.reply.omitUsage ? {} : { usage }),
      };
      if (mode === 'midStreamFailure' || mode === 'truncatedChunked' || mode === 'resetMidStream') {
        res.writeHead(200, { 'content-type': 'application/json' });
        await write(res, JSON.stringify(answer).slice(0, 40));
        return this.breakConnection(ctx);
      }
      return sendJson(res, 200, answer);
    }

    const includeUsage = body.stream_options?.include_usage === true && !this.reply.omitUsage;
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
      ...base,
      object: 'chat.completion.chunk',
      choices,
      ...(includeUsage ? { usage: null } : {}),
      ...extra,
    });
    // Each choice's chunks, then interleaved as OpenAI streams them: one choice's delta per chunk, in turn.
    const choiceEvents = (index: number): unknown[] => {
      const events: unknown[] = [chunk([{ index, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }])];
      if (!calls) {
        completion.words.forEach((word, i) => {
          const text = i === 0 ? word : ` ${word}`;
          events.push(chunk([{ index, delta: this.reply.refusal ? { refusal: text } : { content: text }, logprobs: null, finish_reason: null }]));
        });
      }
      calls?.forEach((call, i) => {
        const toolDelta = (fields: Record<string, unknown>) => chunk([{ index, delta: { tool_calls: [{ index: i, ...fields }] }, logprobs: null, finish_reason: null }]);
        events.push(toolDelta({ id: call.id, type: 'function', function: { name: call.name, arguments: '' } }));
        const pieces = this.reply.argumentPieces ?? 2;
        const size = Math.ceil(call.arguments.length / pieces);
        for (let start = 0; start < call.arguments.length; start += size) events.push(toolDelta({ function: { arguments: call.arguments.slice(start, start + size) } }));
      });
      events.push(chunk([{ index, delta: {}, logprobs: null, finish_reason: finishReason, ...stopReason }]));
      return events;
    };
    const perChoice = Array.from({ length: n }, (_, index) => choiceEvents(index));
    const events: unknown[] = [];
    for (let step = 0; step < perChoice[0].length; step++) perChoice.forEach((list) => events.push(list[step]));
    if (includeUsage) events.push(chunk([], { usage }));

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const sse = new SseWriter(res, this.sseFraming, mixSeed(this.sseSeed, this.requests.length));
    if (mode === 'notSse') {
      await write(res, 'HTTP/1.1 200 OK?\n<html>this is not an event stream</html>\n\x00\x01garbage\n\n');
      return void res.end('more garbage without a data line\n');
    }
    const faultAt = mode && DEFAULT_FAULT_AFTER[mode] !== undefined ? Math.min(this.faultAfterEvents ?? DEFAULT_FAULT_AFTER[mode]!, events.length) : Infinity;
    const failAfter = mode === 'midStreamFailure' ? Math.max(1, Math.floor(events.length / 2)) : Infinity;
    for (let i = 0; i <= events.length; i++) {
      if (res.destroyed) return;
      // The events before a fault or a pause reach the client whole, however they were cut.
      if (i === failAfter || i === faultAt || (i > 0 && ctx.delay)) await sse.flush();
      if (i === failAfter) return ctx.destroy();
      if (i === faultAt) {
        if (mode === 'truncatedChunked' || mode === 'resetMidStream') return this.breakConnection(ctx);
        if (mode === 'endlessLine') {
          await write(res, 'data: {"filler": "');
          return this.writeEndless(res);
        }
        if (mode === 'invalidJsonData') await sse.event('data: {"id": this is not JSON\n\n');
      }
      if (i === events.length) break;
      if (i > 0 && ctx.delay) await pause(ctx.res, ctx.delay);
      if (res.destroyed) return;
      await sse.event(mode === 'malformedJson' && i === 1 ? 'data: {"id": broken\n\n' : `data: ${JSON.stringify(events[i])}\n\n`);
    }
    await sse.end('data: [DONE]\n\n');
  }

  /** The usage block as OpenAI sends it: the totals, and the details when the reply has some (FakeReply.usageDetails). */
  usageBlock(completionTokens: number): Record<string, unknown> {
    const { promptTokens, usageDetails } = this.reply;
    const totals = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
    if (!usageDetails) return totals;
    return {
      ...totals,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0, ...usageDetails.prompt },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0, ...usageDetails.completion },
    };
  }

  private replyMessage(text: string): Record<string, unknown> {
    const calls = this.reply.toolCalls;
    if (this.reply.refusal) return { role: 'assistant', content: null, refusal: text };
    if (!calls) return { role: 'assistant', content: text, refusal: null };
    return { role: 'assistant', content: null, refusal: null, tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) };
  }

  /** The reply, truncated to the client's max_tokens / max_completion_tokens (one word per token then). */
  private completionFor(body: any): { text: string; words: string[]; tokens: number; finishReason: 'stop' | 'length' } {
    const limit = body.max_completion_tokens ?? body.max_tokens;
    const words = this.reply.content.split(/\s+/).filter(Boolean);
    if (typeof limit === 'number' && limit < this.reply.completionTokens) {
      const kept = words.slice(0, limit);
      return { text: kept.join(' '), words: kept, tokens: limit, finishReason: 'length' };
    }
    return { text: this.reply.content, words, tokens: this.reply.completionTokens, finishReason: 'stop' };
  }

  private async answerTranscription(record: RecordedRequest, ctx: AnswerContext): Promise<void> {
    const { res, mode } = ctx;
    if (!record.file) {
      return sendJson(res, 400, { error: { message: 'fake upstream: no file in the upload', type: 'invalid_request_error', param: 'file', code: null } });
    }
    if (mode === 'malformedJson' || mode === 'invalidJsonData' || mode === 'notSse') return sendRaw(res, 200, 'application/json', '{"text": "Hello wor');
    if (mode === 'endlessLine') {
      res.writeHead(200, { 'content-type': 'application/json' });
      await write(res, '{"text": "');
      return this.writeEndless(res);
    }
    const format = record.fields.response_format ?? 'json';
    if (format === 'text') return sendRaw(res, 200, 'text/plain; charset=utf-8', this.transcription.text);
    const answer = format === 'verbose_json' ? { task: 'transcribe', ...this.transcription } : { text: this.transcription.text };
    if (mode === 'midStreamFailure' || mode === 'truncatedChunked' || mode === 'resetMidStream') {
      res.writeHead(200, { 'content-type': 'application/json' });
      await write(res, JSON.stringify(answer).slice(0, 20));
      return this.breakConnection(ctx);
    }
    if (ctx.delay) await pause(ctx.res, ctx.delay);
    sendJson(res, 200, answer);
  }

  private async answerSpeech(body: any, ctx: AnswerContext): Promise<void> {
    const { res, mode } = ctx;
    const format = typeof body.response_format === 'string' ? body.response_format : 'mp3';
    const contentType = SPEECH_CONTENT_TYPES[format];
    if (!contentType) {
      return sendJson(res, 400, { error: { message: `fake upstream: unsupported response_format ${format}`, type: 'invalid_request_error', param: 'response_format', code: null } });
    }
    if (mode === 'malformedJson') return sendRaw(res, 200, 'application/json', '{"audio": ');
    res.writeHead(200, { 'content-type': contentType, 'transfer-encoding': 'chunked' });
    const parts = 4;
    const size = Math.ceil(this.speechAudio.length / parts);
    for (let i = 0; i < parts; i++) {
      if (res.destroyed) return;
      if ((mode === 'midStreamFailure' || mode === 'truncatedChunked' || mode === 'resetMidStream') && i === parts / 2) {
        return this.breakConnection(ctx);
      }
      if (i > 0 && ctx.delay) await pause(ctx.res, ctx.delay);
      if (res.destroyed) return;
      await write(res, this.speechAudio.subarray(i * size, (i + 1) * size));
    }
    res.end();
  }

  /** The mid-answer fault of `mode`: a reset, a clean cut without the terminating chunk, or a plain destroy. */
  private breakConnection(ctx: AnswerContext): void {
    if (ctx.mode === 'resetMidStream') return ctx.reset();
    if (ctx.mode === 'truncatedChunked') return ctx.truncate();
    ctx.destroy();
  }

  /** Writes bytes with no newline, with backpressure, until the client goes away or the cap is reached. */
  private async writeEndless(res: ServerResponse): Promise<void> {
    let sent = 0;
    // Node 26 fails the writes to a socket its peer closed without marking the response destroyed: stop at
    // the first failed write, or this would count the cap as sent.
    while (!res.destroyed && sent < this.endlessLineMaxBytes) {
      if (!(await write(res, ENDLESS_CHUNK))) return;
      sent += ENDLESS_CHUNK.length;
      this.endlessBytesSent += ENDLESS_CHUNK.length;
    }
    if (!res.destroyed) res.socket?.end();
  }

  /**
   * Control over HTTP, for a fake run as its own process (`npx ts-node test/support/fake-upstream.ts`):
   * POST /_fake/fail-next {"mode", "times"?}, POST /_fake/failure {"mode": null | mode},
   * POST /_fake/fault-after {"events": n | null}, POST /_fake/reasoning-models {"models": [...]}, POST /_fake/reset,
   * GET /_fake/requests.
   */
  private control(url: string, raw: Buffer, res: ServerResponse): void {
    let body: { mode?: FailureMode | null; times?: number; events?: number | null; models?: string[] } = {};
    try {
      body = raw.length ? JSON.parse(raw.toString('utf8')) : {};
    } catch {
      return sendJson(res, 400, { error: 'body is not JSON' });
    }
    if (url === '/_fake/fail-next' && body.mode) this.failNext(body.mode, body.times ?? 1);
    else if (url === '/_fake/failure') this.failure = body.mode ?? null;
    else if (url === '/_fake/fault-after') this.faultAfterEvents = body.events ?? null;
    else if (url === '/_fake/reasoning-models') this.reasoningModels = new Set(body.models ?? []);
    else if (url === '/_fake/reset') this.resetState();
    else if (url === '/_fake/requests') return sendJson(res, 200, { requests: this.requests.map(({ headers: _h, ...rest }) => rest), endlessBytesSent: this.endlessBytesSent });
    else return sendJson(res, 404, { error: `fake upstream: no control ${url}` });
    sendJson(res, 200, { ok: true });
  }
}

interface AnswerContext {
  res: ServerResponse;
  mode: FailureMode | null;
  destroy(): void;
  /** A TCP reset (RST) instead of a clean close. */
  reset(): void;
  /** The connection ends cleanly where the answer stands (no terminating chunk). */
  truncate(): void;
  delay: number;
}

export async function startFakeUpstream(port = 0): Promise<FakeUpstream> {
  return new FakeUpstream().start(port);
}

/** A base URL (ending in /v1) on a loopback port that nothing listens on: connections are refused. */
export async function unusedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * Resolves once the data is handed to the socket, so that a later destroy cannot discard it; false if the
 * write failed (the client went away).
 */
function write(res: ServerResponse, data: string | Buffer): Promise<boolean> {
  return new Promise((resolve) => res.write(data, (err) => resolve(!err)));
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendRaw(res, status, 'application/json', JSON.stringify(body));
}

function sendRaw(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

// As its own process: `FAKE_UPSTREAM_PORT=0 npx ts-node test/support/fake-upstream.ts` prints its base URL on stdout
// and is steered with the /_fake/ control routes.
if (require.main === module) {
  startFakeUpstream(Number(process.env.FAKE_UPSTREAM_PORT ?? 0)).then((fake) => {
    process.stdout.write(`${fake.url}\n`);
    process.on('SIGTERM', () => void fake.close().then(() => process.exit(0)));
  });
}
