import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { FakeServer, parseBody, pause, readAll, sendJson, sendRaw, serveAsProcess, sleep, write } from './fake-server';
import { FailureMode, FakeReply, FakeTranscription, openAiBodyProblem, RATE_LIMIT_BODIES, RateLimitKind, REASONING_MAX_TOKENS_ERROR, ProjectTier, RecordedRequest, servedServiceTier, SPEECH_CONTENT_TYPES, openAiUnauthorized } from './fake-openai-wire';
import { StreamAnswerContext, writeEventStream } from './fake-event-stream';
import { mixSeed, SSE_BASE_SEED, SseFraming, SseWriter } from './sse-framing';
import { FakeResponsesApi } from './fake-openai-responses';

/**
 * A fake OpenAI-compatible upstream over real HTTP on 127.0.0.1 (base URL `fake.url`, ending in /v1):
 * chat completions (JSON and SSE), transcriptions (multipart, verbose_json), speech (streamed audio) and Responses
 * (`fake.responses`, fake-openai-responses.ts),
 * with failure modes, and a record of every request it received and whether its client gave up on it.
 * OpenAI's bodies and types are in fake-openai-wire.ts, its request checks in openai-request-check.ts.
 */

export type { FailureMode, FakeReply, FakeTranscription, RateLimitKind, RecordedFile, RecordedRequest, ResponsesRecord } from './fake-openai-wire';
export { openAiUnauthorized, REASONING_MAX_TOKENS_ERROR } from './fake-openai-wire';

const ENDLESS_CHUNK = 'x'.repeat(64 * 1024);

/** Fakes started in this test file so far: fake k's framings are seeded from (SSE_BASE_SEED, k). */
let fakesStarted = 0;

/** The key the fake OpenAI wants by default, and the variable the tests' provider configs name for it. */
export const FAKE_OPENAI_KEY = 'sk-fake-openai-0123456789abcdefghij';
export const FAKE_OPENAI_KEY_ENV = 'FAKE_OPENAI_TEST_KEY';
process.env[FAKE_OPENAI_KEY_ENV] ??= FAKE_OPENAI_KEY;

/** The gateway's provider config for a fake OpenAI at `baseUrl`: openai-compatible, its key from FAKE_OPENAI_KEY_ENV. */
export function fakeOpenAiProvider(baseUrl: string, requestMs = 10_000): Record<string, unknown> {
  return { type: 'openai-compatible', base_url: baseUrl, api_key_env: FAKE_OPENAI_KEY_ENV, timeouts: { connect_ms: 1000, request_ms: requestMs } };
}

export class FakeUpstream extends FakeServer<RecordedRequest, FailureMode> {
  protected readonly label = 'fake upstream';
  protected readonly urlPath = '/v1';
  reply: FakeReply = FakeUpstream.defaultReply();
  transcription: FakeTranscription = FakeUpstream.defaultTranscription();
  speechAudio: Buffer = Buffer.from('ID3fake-audio-bytes-'.repeat(64));
  slowChunkDelayMs = 1000;
  failureMessage = 'The fake upstream rejected this request.';
  /** Seconds sent as Retry-After by `status429` (none when null). */
  retryAfterS: number | null = null;
  /** Which of OpenAI's 429 bodies `status429` sends. */
  rateLimit: RateLimitKind = 'requests';
  /** The only key accepted (`Authorization: Bearer`), else OpenAI's 401 (openAiUnauthorized); null: any key, or none. */
  apiKey: string | null = FAKE_OPENAI_KEY;
  /** `endlessLine` stops (and ends the socket) after this many bytes if its client never gives up. */
  endlessLineMaxBytes = 256 * 1024 * 1024;
  /** Bytes of the endless line written so far (all requests since the last resetState). */
  endlessBytesSent = 0;
  /**
   * Upstream models that behave as OpenAI's reasoning models (o-series, GPT-5 family) do with the output limit:
   * a chat request carrying `max_tokens` gets OpenAI's 400 (REASONING_MAX_TOKENS_ERROR); `max_completion_tokens` is served.
   */
  reasoningModels = new Set<string>();
  /**
   * Priority capacity is short: a request asking `priority` (or `fast`) is served, and reported, at `default`, as OpenAI
   * does (servedServiceTier in fake-openai-wire.ts). Over HTTP: POST /_fake/downgrade-priority {"on": true}.
   */
  downgradePriority = false;
  /** The tier of a request that asks `auto` or none: the project's default in its owner's settings (a tier the catalog may not price). */
  projectTier: ProjectTier = 'default';
  /** How SSE answers are cut into writes (test/support/sse-framing.ts): random by default; `exact` for a test that needs one write per event. */
  sseFraming: SseFraming = 'random';
  private readonly sseSeed = mixSeed(SSE_BASE_SEED, ++fakesStarted);
  /** POST /v1/responses and the Responses-only models refused on chat (fake-openai-responses.ts): its knobs and stored ids. */
  readonly responses = new FakeResponsesApi(this);

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

  /** Back to normal answers and default replies, with an empty record. */
  resetState(): void {
    super.resetState();
    this.reasoningModels.clear();
    this.downgradePriority = false;
    this.projectTier = 'default';
    this.reply = FakeUpstream.defaultReply();
    this.transcription = FakeUpstream.defaultTranscription();
    this.endlessBytesSent = 0;
    this.failureMessage = 'The fake upstream rejected this request.';
    this.retryAfterS = null;
    this.rateLimit = 'requests';
    this.apiKey = FAKE_OPENAI_KEY;
    this.sseFraming = 'random';
    this.responses.reset();
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readAll(req);
    if (req.url?.startsWith('/_fake/')) return this.control(req.url, raw.toString('utf8'), res);
    const record: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: undefined, fields: {}, aborted: false, finished: false };
    Object.assign(record, await parseBody(String(req.headers['content-type'] ?? ''), raw));
    const breakOff = this.track(record, req, res);
    const destroy = () => breakOff();

    const mode = this.nextMode(String(record.body?.model));
    if (mode === 'hang') return;
    if (mode === 'reset') return destroy();
    await this.gate.passed();
    if (this.responseDelayMs) await sleep(this.responseDelayMs);
    if (res.destroyed) return;
    const bearer = /^Bearer (.+)$/i.exec(String(req.headers.authorization ?? ''))?.[1];
    if (this.apiKey !== null && bearer !== this.apiKey) return sendJson(res, 401, openAiUnauthorized(bearer));
    const refused = openAiBodyProblem(req.method, record);
    if (refused) return sendJson(res, 400, refused);
    const refusedByResponses = this.responses.refusal(req.method, record);
    if (refusedByResponses) return sendJson(res, refusedByResponses.status, refusedByResponses.body);
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
    // truncate: ends the TCP connection once what was written is flushed, without the chunked body's terminating chunk.
    const ctx: AnswerContext = { res, mode, destroy, reset: () => breakOff('reset'), truncate: () => breakOff('end'), delay: mode === 'slowChunks' ? this.slowChunkDelayMs : this.chunkDelayMs };

    if (req.method === 'POST' && record.path === '/v1/chat/completions' && record.body) return this.answerChat(record.body, ctx);
    if (req.method === 'POST' && record.path === '/v1/audio/transcriptions') return this.answerTranscription(record, ctx);
    if (req.method === 'POST' && record.path === '/v1/audio/speech' && record.body) return this.answerSpeech(record.body, ctx);
    if (req.method === 'POST' && record.path === '/v1/responses') {
      const sse = new SseWriter(res, this.sseFraming, mixSeed(this.sseSeed, this.requests.length));
      return this.responses.answer(record, this.streamContext(ctx, sse));
    }
    sendJson(res, 404, { error: { message: `fake upstream: no route ${req.method} ${record.path}`, type: 'invalid_request_error', param: null, code: null } });
  }

  private async answerChat(body: any, ctx: AnswerContext): Promise<void> {
    const { res, mode } = ctx;
    const completion = this.completionFor(body);
    const calls = this.reply.toolCalls;
    const base = { id: `chatcmpl-fake${this.requests.length}`, created: Math.floor(Date.now() / 1000), model: String(body.model), service_tier: servedServiceTier(body.service_tier, this.downgradePriority, this.projectTier) };
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

    const sse = new SseWriter(res, this.sseFraming, mixSeed(this.sseSeed, this.requests.length));
    return writeEventStream(
      events.map((event) => `data: ${JSON.stringify(event)}\n\n`),
      this.streamContext(ctx, sse),
      { contentType: 'text/event-stream', endless: 'data: {"filler": "', invalidJson: 'data: {"id": this is not JSON\n\n', malformed: 'data: {"id": broken\n\n', end: 'data: [DONE]\n\n' },
    );
  }

  /** What the stream writer (fake-event-stream.ts) needs of this answer. */
  private streamContext(ctx: AnswerContext, sse: SseWriter): StreamAnswerContext {
    return { ...ctx, faultAfterEvents: this.faultAfterEvents, sse, breakConnection: () => this.breakConnection(ctx), writeEndless: () => this.writeEndless(ctx.res) };
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

  /** POST /_fake/reasoning-models {"models": [...]} and /_fake/downgrade-priority {"on": bool}, beside the scaffold's control routes (fake-server.ts). */
  protected controlMore(path: string, body: { models?: string[]; on?: boolean }): boolean {
    if (this.responses.control(path, body)) return true;
    if (path === '/_fake/reasoning-models') this.reasoningModels = new Set(body.models ?? []);
    else if (path === '/_fake/downgrade-priority') this.downgradePriority = body.on === true;
    else return false;
    return true;
  }

  protected recordForControl(): unknown {
    return { requests: this.requests.map(({ headers: _h, ...rest }) => rest), endlessBytesSent: this.endlessBytesSent };
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

// As its own process: `FAKE_UPSTREAM_PORT=0 npx ts-node test/support/fake-upstream.ts` prints its base URL on stdout
// and is steered with the /_fake/ control routes.
serveAsProcess(module, startFakeUpstream, 'FAKE_UPSTREAM_PORT');
