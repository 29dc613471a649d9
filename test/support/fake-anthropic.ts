import { createHash } from 'node:crypto';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { mixSeed, SSE_BASE_SEED, SseFraming, SseWriter } from './sse-framing';

/**
 * A fake Anthropic upstream over real HTTP on 127.0.0.1 (base URL `fake.url`, without /v1, as
 * `https://api.anthropic.com` is given to the SDK and to a provider's `base_url`). Written from Anthropic's
 * documentation (Messages API, streaming messages, prompt caching, errors, token counting) and from the types
 * and stream parser of `@anthropic-ai/sdk`; docs/chat-testing.md, "The fake Anthropic upstream", says what it
 * models and what it does not.
 *
 * - `POST /v1/messages` (JSON, or SSE with `event:` lines when `stream: true`) and
 *   `POST /v1/messages/count_tokens`; a query string (the SDK's beta calls add `?beta=true`) is accepted.
 * - `x-api-key` (or `Authorization: Bearer`, as @anthropic-ai/sdk 1.x sends its apiKey) must be `fake.apiKey`
 *   (401 `authentication_error`); `anthropic-version` must be present (400).
 * - Bodies are validated where Anthropic refuses them (400 `invalid_request_error` with Anthropic's wording);
 *   a model outside `fake.models` is 404 `not_found_error`.
 * - Usage: input tokens counted by `fakeTokenCount` (below), cache reads and writes computed from the request's
 *   `cache_control` breakpoints against a per-instance prompt cache (`FakeAnthropic.usageFor`).
 */

/**
 * The fake's tokenizer, deterministic and easy to reckon by hand: one token per run of letters, digits and
 * `_` (any script), and one per other non-space character; whitespace is free. `"Hello, world!"` is 4 tokens.
 * It is not Claude's tokenizer (which is not public); tests compare the gateway against the fake's figures.
 */
export function fakeTokenCount(text: string): number {
  return text.match(TOKEN_RE)?.length ?? 0;
}
const TOKEN_RE = /[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu;
/** The same tokens with the whitespace before each: the pieces concatenate back to the text (trailing whitespace goes to the last). */
function tokenPieces(text: string): string[] {
  const pieces: string[] = [...(text.match(/\s*(?:[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_])/gu) ?? [])];
  const rest = text.slice(pieces.join('').length);
  if (rest) {
    if (pieces.length) pieces[pieces.length - 1] += rest;
    else pieces.push(rest);
  }
  return pieces;
}

export type AnthropicFailureMode =
  | 'status400' // invalid_request_error carrying `failureMessage`
  | 'status401' // authentication_error
  | 'status403' // permission_error
  | 'status404' // not_found_error
  | 'status429' // rate_limit_error, with `retry-after: retryAfterS` and anthropic-ratelimit-* headers
  | 'status500' // api_error
  | 'status529' // overloaded_error
  | 'cutStream' // a stream: N events (default: half of them), then the socket is destroyed; JSON: part of the body, then destroyed
  | 'errorEvent' // a stream: N events (default: half of them), then `event: error` (overloaded_error) and the end; JSON: a 529
  | 'reset' // the socket is destroyed before any answer
  | 'hang'; // never answers

const ERROR_STATUS: Partial<Record<AnthropicFailureMode, { status: number; type: string; message: string }>> = {
  status401: { status: 401, type: 'authentication_error', message: 'invalid x-api-key' },
  status403: { status: 403, type: 'permission_error', message: 'Your API key does not have permission to use the specified resource.' },
  status404: { status: 404, type: 'not_found_error', message: 'The requested resource could not be found.' },
  status429: {
    status: 429,
    type: 'rate_limit_error',
    message: "This request would exceed the rate limit for your organization (fake) of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.",
  },
  status500: { status: 500, type: 'api_error', message: 'Internal server error' },
  status529: { status: 529, type: 'overloaded_error', message: 'Overloaded' },
};

/** The fake's answer to the next requests. */
export interface AnthropicReply {
  /** The text block ('' for none: an answer of tool_use blocks only). */
  text: string;
  /** A thinking block before the text: streamed as thinking_delta pieces, then one signature_delta. */
  thinking?: { thinking: string; signature: string };
  /** A redacted_thinking block (before the text, after `thinking`): sent whole in its content_block_start. */
  redactedThinking?: string;
  /** tool_use blocks after the text; streamed with `input` as input_json_delta pieces (`inputJsonPieces`). */
  toolUses?: { id: string; name: string; input: Record<string, unknown> }[];
  /**
   * The stop reason when neither max_tokens nor a stop sequence cut the answer; default `tool_use` when there are
   * tool uses, else `end_turn`. (`stop_sequence` comes from the request's `stop_sequences` found in the text.)
   */
  stopReason?: 'end_turn' | 'tool_use' | 'refusal' | 'pause_turn';
  /** usage.output_tokens instead of the count of the answer's tokens (when max_tokens did not cut it). */
  outputTokens?: number;
  /** How many input_json_delta pieces a tool's input is streamed in after the first, empty one (default 3). */
  inputJsonPieces?: number;
  /** Tokens per text_delta / thinking_delta (default 2). */
  deltaTokens?: number;
}

export interface AnthropicUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  output_tokens: number;
  service_tier: 'standard';
}

export interface AnthropicRecordedRequest {
  method: string;
  /** The path without the query string, e.g. /v1/messages. */
  path: string;
  /** The query string with its `?`, or ''. */
  query: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received (pass-through tests compare it). */
  rawBody: string;
  /** The parsed JSON body; undefined when it did not parse. */
  body: any;
  /** What the fake answered on a 200 /v1/messages (its usage holds the cache figures it computed). */
  answered?: { usage: AnthropicUsage; stopReason: string; content: unknown[] };
  /** The client closed the connection before the answer was complete. */
  aborted: boolean;
  /** The whole answer was written. */
  finished: boolean;
}

/** Anthropic checks for cache hits at the block boundaries up to 20 blocks before each breakpoint. */
const LOOKBACK_BLOCKS = 20;
const TTL_MS = { '5m': 5 * 60_000, '1h': 60 * 60_000 } as const;
type Ttl = keyof typeof TTL_MS;

/** One unit of the prompt in Anthropic's order (tools, then system, then messages), with its breakpoint if any. */
interface PromptUnit {
  tokens: number;
  /** Hash of the prompt up to and including this unit (cache_control markers left out). */
  hash: string;
  ttl?: Ttl;
}

class RequestError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/** Fakes started in this test file so far: fake k's framings are seeded from (SSE_BASE_SEED, 1000 + k). */
let fakesStarted = 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class FakeAnthropic {
  /** e.g. http://127.0.0.1:41234 (no /v1: the SDK and the provider's base_url add the paths). */
  url = '';
  /** The only key accepted, in `x-api-key` or `Authorization: Bearer`. */
  apiKey = 'sk-ant-fake-key';
  /** Models served; any other is 404 not_found_error (`model: <name>`). */
  models = new Set(FakeAnthropic.defaultModels());
  reply: AnthropicReply = FakeAnthropic.defaultReply();
  /** Waited before the first byte of every answer (errors included). */
  responseDelayMs = 0;
  /** Waited between SSE events. */
  chunkDelayMs = 0;
  failureMessage = 'The fake Anthropic upstream rejected this request.';
  /** Sent as `retry-after` by `status429` (none when null). */
  retryAfterS: number | null = 1;
  /** Good events before `cutStream` / `errorEvent` strikes; null: half of the stream's events. */
  faultAfterEvents: number | null = null;
  /** A mode for every request until cleared; `failNext` takes precedence. */
  failure: AnthropicFailureMode | null = null;
  /** A mode for every request whose body names this model. */
  failureByModel: Record<string, AnthropicFailureMode> = {};
  /** How SSE answers are cut into writes (test/support/sse-framing.ts): random by default. */
  sseFraming: SseFraming = 'random';
  /** The clock of the prompt cache (tests move it to expire entries). */
  now: () => number = () => Date.now();
  readonly requests: AnthropicRecordedRequest[] = [];
  /** The prompt cache: prefix hash → expiry (ms on `now()`). */
  readonly cache = new Map<string, number>();
  private readonly queued: AnthropicFailureMode[] = [];
  private readonly sseSeed = mixSeed(SSE_BASE_SEED, 1000 + ++fakesStarted);
  private ids = 0;
  private server!: Server;

  static defaultReply(): AnthropicReply {
    return { text: 'Hello from the fake Anthropic upstream.' };
  }

  static defaultModels(): string[] {
    return ['claude-opus-4-7', 'claude-opus-4-6', 'claude-sonnet-4-6', 'claude-opus-4-5', 'claude-sonnet-4-5', 'claude-sonnet-4-5-20250929', 'claude-haiku-4-5', 'claude-haiku-4-5-20251001', 'claude-opus-4-1'];
  }

  /** The next `times` requests fail with `mode`, then normal answers resume. */
  failNext(mode: AnthropicFailureMode, times = 1): void {
    for (let i = 0; i < times; i++) this.queued.push(mode);
  }

  /** Back to normal answers, default reply, models and key, an empty record and an empty prompt cache. */
  resetState(): void {
    this.requests.length = 0;
    this.queued.length = 0;
    this.cache.clear();
    this.failure = null;
    this.failureByModel = {};
    this.reply = FakeAnthropic.defaultReply();
    this.models = new Set(FakeAnthropic.defaultModels());
    this.apiKey = 'sk-ant-fake-key';
    this.responseDelayMs = 0;
    this.chunkDelayMs = 0;
    this.faultAfterEvents = null;
    this.failureMessage = 'The fake Anthropic upstream rejected this request.';
    this.retryAfterS = 1;
    this.sseFraming = 'random';
    this.now = () => Date.now();
  }

  aborted(): AnthropicRecordedRequest[] {
    return this.requests.filter((r) => r.aborted);
  }

  /** Resolves once `predicate` holds (polled), or throws after `timeoutMs`. */
  async waitFor(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error('fake anthropic: condition not met in time');
      await sleep(10);
    }
  }

  async start(port = 0): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy());
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /**
   * All input tokens of a Messages (or count_tokens) body: tools, system and messages, cache included. What
   * count_tokens answers, and input + cache read + cache write of the answer's usage. Throws on a body the
   * fake would refuse.
   */
  static countInputTokens(body: any): number {
    return promptUnits(body).reduce((sum, u) => sum + u.tokens, 0);
  }

  /**
   * The input side of the usage this request would get now, from the prompt cache as it stands; with
   * `write`, the cache is updated as the answer does (every breakpoint's prefix written or refreshed).
   *
   * Breakpoints are the blocks marked `cache_control` (and the last block of the last message when the
   * request carries a top-level `cache_control`), taken in Anthropic's order: tools, system, messages. The
   * longest cached prefix that ends at a breakpoint, or at one of the 20 blocks before a breakpoint
   * (Anthropic's lookback), is read (`cache_read_input_tokens`: every token up to its end); each breakpoint
   * past it writes the tokens between the end of the read prefix or of the previous breakpoint and itself
   * (`cache_creation_input_tokens`, split in `cache_creation` by that breakpoint's `ttl`, 5m by default);
   * `input_tokens` is what follows the last breakpoint. Only breakpoints' prefixes are written. Anthropic's
   * minimum cacheable length is not modelled (any prefix is cached).
   */
  usageFor(body: any, write = false): Omit<AnthropicUsage, 'output_tokens' | 'service_tier'> {
    const units = promptUnits(body);
    const now = this.now();
    const cached = (hash: string) => (this.cache.get(hash) ?? -1) > now;
    const ends: number[] = [];
    let position = 0;
    for (const unit of units) ends.push((position += unit.tokens));
    const breakpoints = units.flatMap((u, i) => (u.ttl ? [{ unit: i, end: ends[i], hash: u.hash, ttl: u.ttl }] : []));
    // The longest cached prefix ending at a breakpoint or at one of the LOOKBACK_BLOCKS blocks before one.
    let read = 0;
    for (const b of breakpoints) {
      for (let i = b.unit; i >= Math.max(0, b.unit - LOOKBACK_BLOCKS); i--) {
        if (cached(units[i].hash)) {
          read = Math.max(read, ends[i]);
          break;
        }
      }
    }
    const creation = { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 };
    let from = read;
    for (const b of breakpoints) {
      if (b.end <= from) continue;
      creation[b.ttl === '1h' ? 'ephemeral_1h_input_tokens' : 'ephemeral_5m_input_tokens'] += b.end - from;
      from = b.end;
    }
    if (write) {
      for (const b of breakpoints) this.cache.set(b.hash, Math.max(this.cache.get(b.hash) ?? 0, now + TTL_MS[b.ttl]));
    }
    return {
      input_tokens: position - (breakpoints.at(-1)?.end ?? 0),
      cache_creation_input_tokens: creation.ephemeral_5m_input_tokens + creation.ephemeral_1h_input_tokens,
      cache_read_input_tokens: read,
      cache_creation: creation,
    };
  }

  private nextRequestId(): string {
    return `req_011CFake${String(++this.ids).padStart(12, '0')}`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = (await readAll(req)).toString('utf8');
    const [path, ...rest] = (req.url ?? '').split('?');
    if (path.startsWith('/_fake/')) return this.control(path, raw, res);
    const record: AnthropicRecordedRequest = { method: req.method ?? '', path, query: rest.length ? `?${rest.join('?')}` : '', headers: req.headers, rawBody: raw, body: undefined, aborted: false, finished: false };
    try {
      record.body = JSON.parse(raw);
    } catch {
      record.body = undefined;
    }
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
    const requestId = this.nextRequestId();
    res.setHeader('request-id', requestId);
    const fail = (status: number, type: string, message: string) => sendJson(res, status, { type: 'error', error: { type, message }, request_id: requestId });

    const model = typeof record.body?.model === 'string' ? record.body.model : '';
    const mode = this.failureByModel[model] ?? this.queued.shift() ?? this.failure;
    if (mode === 'hang') return;
    if (mode === 'reset') return destroy();
    if (this.responseDelayMs) await sleep(this.responseDelayMs);
    if (res.destroyed) return;

    const route = req.method === 'POST' && path === '/v1/messages' ? 'messages' : req.method === 'POST' && path === '/v1/messages/count_tokens' ? 'count' : null;
    if (!route) return fail(404, 'not_found_error', 'Not Found');
    // The key as `x-api-key` (the API's documented header, what the gateway sends), or as `Authorization:
    // Bearer`, which @anthropic-ai/sdk 1.x sends for its apiKey option.
    const bearer = /^Bearer (.+)$/i.exec(String(req.headers.authorization ?? ''))?.[1];
    const key = req.headers['x-api-key'] ?? bearer;
    if (key !== this.apiKey) return fail(401, 'authentication_error', key ? 'invalid x-api-key' : 'x-api-key header is required');
    if (!req.headers['anthropic-version']) return fail(400, 'invalid_request_error', 'anthropic-version: header is required');

    if (mode === 'status400') return fail(400, 'invalid_request_error', this.failureMessage);
    const scripted = mode ? ERROR_STATUS[mode] : undefined;
    if (scripted) {
      if (mode === 'status429') {
        if (this.retryAfterS !== null) res.setHeader('retry-after', String(this.retryAfterS));
        res.setHeader('anthropic-ratelimit-requests-limit', '50');
        res.setHeader('anthropic-ratelimit-requests-remaining', '0');
        res.setHeader('anthropic-ratelimit-requests-reset', new Date(Date.now() + (this.retryAfterS ?? 1) * 1000).toISOString());
      }
      return fail(scripted.status, scripted.type, scripted.message);
    }
    if (mode === 'errorEvent' && record.body?.stream !== true) return fail(529, 'overloaded_error', 'Overloaded');

    try {
      if (record.body === undefined || record.body === null || typeof record.body !== 'object' || Array.isArray(record.body)) {
        throw new RequestError(400, 'invalid_request_error', 'There was an issue with the request body: it is not a JSON object.');
      }
      validateBody(record.body, route);
      if (!this.models.has(record.body.model)) throw new RequestError(404, 'not_found_error', `model: ${record.body.model}`);
      promptUnits(record.body); // cache_control checks
    } catch (err) {
      if (err instanceof RequestError) return fail(err.status, err.type, err.message);
      throw err;
    }

    if (route === 'count') {
      const answer = JSON.stringify({ input_tokens: FakeAnthropic.countInputTokens(record.body) });
      if (mode === 'cutStream') return this.cutJson(res, answer, destroy);
      return sendRaw(res, 200, answer);
    }
    return this.answerMessage(record, res, requestId, mode, destroy);
  }

  private async cutJson(res: ServerResponse, answer: string, destroy: () => void): Promise<void> {
    res.writeHead(200, { 'content-type': 'application/json' });
    await write(res, answer.slice(0, Math.floor(answer.length / 2)));
    destroy();
  }

  private async answerMessage(record: AnthropicRecordedRequest, res: ServerResponse, requestId: string, mode: AnthropicFailureMode | null, destroy: () => void): Promise<void> {
    const body = record.body;
    const output = this.outputFor(body);
    const usage: AnthropicUsage = { ...this.usageFor(body, true), output_tokens: output.outputTokens, service_tier: 'standard' };
    const message = {
      id: `msg_01Fake${String(this.ids).padStart(18, '0')}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: output.blocks,
      stop_reason: output.stopReason,
      stop_sequence: output.stopSequence,
      usage,
    };
    record.answered = { usage, stopReason: output.stopReason, content: output.blocks };

    if (body.stream !== true) {
      const answer = JSON.stringify(message);
      if (mode === 'cutStream') return this.cutJson(res, answer, destroy);
      return sendRaw(res, 200, answer);
    }

    const events: [string, unknown][] = [];
    events.push(['message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } }]);
    const deltaTokens = this.reply.deltaTokens ?? 2;
    const grouped = (text: string) => {
      const pieces = tokenPieces(text);
      const out: string[] = [];
      for (let i = 0; i < pieces.length; i += deltaTokens) out.push(pieces.slice(i, i + deltaTokens).join(''));
      return out;
    };
    output.blocks.forEach((block: any, index) => {
      const delta = (d: Record<string, unknown>) => events.push(['content_block_delta', { type: 'content_block_delta', index, delta: d }]);
      if (block.type === 'thinking') {
        events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } }]);
        for (const piece of grouped(block.thinking)) delta({ type: 'thinking_delta', thinking: piece });
        delta({ type: 'signature_delta', signature: block.signature });
      } else if (block.type === 'text') {
        events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }]);
        for (const piece of grouped(block.text)) delta({ type: 'text_delta', text: piece });
      } else if (block.type === 'tool_use') {
        events.push(['content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } }]);
        const json = JSON.stringify(block.input);
        const pieces = Math.max(1, this.reply.inputJsonPieces ?? 3);
        const size = Math.ceil(json.length / pieces);
        delta({ type: 'input_json_delta', partial_json: '' });
        for (let start = 0; start < json.length; start += size) delta({ type: 'input_json_delta', partial_json: json.slice(start, start + size) });
      } else {
        events.push(['content_block_start', { type: 'content_block_start', index, content_block: block }]);
      }
      events.push(['content_block_stop', { type: 'content_block_stop', index }]);
      // Anthropic sends a ping after the first block opens (the streaming guide's example).
      if (index === 0) events.splice(2, 0, ['ping', { type: 'ping' }]);
    });
    if (output.blocks.length === 0) events.push(['ping', { type: 'ping' }]);
    events.push([
      'message_delta',
      {
        type: 'message_delta',
        delta: { stop_reason: output.stopReason, stop_sequence: output.stopSequence },
        usage: { input_tokens: usage.input_tokens, cache_creation_input_tokens: usage.cache_creation_input_tokens, cache_read_input_tokens: usage.cache_read_input_tokens, output_tokens: usage.output_tokens },
      },
    ]);
    events.push(['message_stop', { type: 'message_stop' }]);

    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const sse = new SseWriter(res, this.sseFraming, mixSeed(this.sseSeed, this.requests.length));
    const faultAt = mode === 'cutStream' || mode === 'errorEvent' ? Math.min(this.faultAfterEvents ?? Math.floor(events.length / 2), events.length) : Infinity;
    for (let i = 0; i < events.length; i++) {
      if (res.destroyed) return;
      if (i === faultAt || (i > 0 && this.chunkDelayMs)) await sse.flush();
      if (i === faultAt && mode === 'cutStream') return destroy();
      if (i === faultAt) {
        return sse.end(sseEvent('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' }, request_id: requestId }));
      }
      if (i > 0 && this.chunkDelayMs) await sleep(this.chunkDelayMs);
      if (res.destroyed) return;
      const [name, data] = events[i];
      if (i === events.length - 1) return sse.end(sseEvent(name, data));
      await sse.event(sseEvent(name, data));
    }
  }

  /** The answer's blocks, cut by the request's stop sequences and max_tokens, with its stop reason and output tokens. */
  private outputFor(body: any): { blocks: unknown[]; stopReason: string; stopSequence: string | null; outputTokens: number } {
    const reply = this.reply;
    let budget: number = body.max_tokens;
    let cut = false;
    const blocks: unknown[] = [];
    const take = (text: string): string => {
      const pieces = tokenPieces(text);
      const n = fakeTokenCount(text);
      if (n <= budget) {
        budget -= n;
        return text;
      }
      cut = true;
      const kept = pieces.slice(0, budget).join('');
      budget = 0;
      return kept;
    };
    if (reply.thinking) blocks.push({ type: 'thinking', thinking: take(reply.thinking.thinking), signature: reply.thinking.signature });
    if (!cut && reply.redactedThinking !== undefined) blocks.push({ type: 'redacted_thinking', data: reply.redactedThinking });
    let stopSequence: string | null = null;
    if (!cut && reply.text) {
      let text = reply.text;
      const stops: string[] = Array.isArray(body.stop_sequences) ? body.stop_sequences : [];
      let at = -1;
      for (const s of stops) {
        const i = s ? text.indexOf(s) : -1;
        if (i >= 0 && (at < 0 || i < at)) [at, stopSequence] = [i, s];
      }
      if (at >= 0) text = text.slice(0, at);
      text = take(text);
      if (text || stopSequence === null) blocks.push({ type: 'text', text });
    }
    if (!cut && stopSequence === null) {
      for (const tool of reply.toolUses ?? []) {
        const n = fakeTokenCount(tool.name) + fakeTokenCount(JSON.stringify(tool.input));
        if (n > budget) {
          cut = true;
          break;
        }
        budget -= n;
        blocks.push({ type: 'tool_use', id: tool.id, name: tool.name, input: tool.input });
      }
    }
    const used = body.max_tokens - budget;
    if (cut) return { blocks, stopReason: 'max_tokens', stopSequence: null, outputTokens: body.max_tokens };
    if (stopSequence !== null) return { blocks, stopReason: 'stop_sequence', stopSequence, outputTokens: used };
    const stopReason = reply.stopReason ?? (reply.toolUses?.length ? 'tool_use' : 'end_turn');
    return { blocks, stopReason, stopSequence: null, outputTokens: reply.outputTokens ?? Math.max(1, used) };
  }

  /**
   * Control over HTTP, for a fake run as its own process (`npx ts-node test/support/fake-anthropic.ts`):
   * POST /_fake/fail-next {"mode", "times"?}, POST /_fake/failure {"mode": null | mode}, POST /_fake/reply {reply},
   * POST /_fake/reset, GET /_fake/requests.
   */
  private control(path: string, raw: string, res: ServerResponse): void {
    let body: any = {};
    try {
      body = raw.length ? JSON.parse(raw) : {};
    } catch {
      return sendRaw(res, 400, JSON.stringify({ error: 'body is not JSON' }));
    }
    if (path === '/_fake/fail-next' && body.mode) this.failNext(body.mode, body.times ?? 1);
    else if (path === '/_fake/failure') this.failure = body.mode ?? null;
    else if (path === '/_fake/reply') this.reply = body;
    else if (path === '/_fake/reset') this.resetState();
    else if (path === '/_fake/requests') return sendRaw(res, 200, JSON.stringify({ requests: this.requests }));
    else return sendRaw(res, 404, JSON.stringify({ error: `fake anthropic: no control ${path}` }));
    sendRaw(res, 200, JSON.stringify({ ok: true }));
  }
}

export async function startFakeAnthropic(port = 0): Promise<FakeAnthropic> {
  return new FakeAnthropic().start(port);
}

// ---- validation, as Anthropic answers (400 invalid_request_error; wording from its answers) ----

const ROLES = new Set(['user', 'assistant', 'system']);

function validateBody(body: any, route: 'messages' | 'count'): void {
  const bad = (message: string) => new RequestError(400, 'invalid_request_error', message);
  if (body.model === undefined) throw bad('model: Field required');
  if (typeof body.model !== 'string') throw bad('model: Input should be a valid string');
  if (route === 'messages') {
    if (body.max_tokens === undefined) throw bad('max_tokens: Field required');
    if (!Number.isInteger(body.max_tokens)) throw bad('max_tokens: Input should be a valid integer');
    if (body.max_tokens < 1) throw bad('max_tokens: Input should be greater than or equal to 1');
    if (body.stream !== undefined && typeof body.stream !== 'boolean') throw bad('stream: Input should be a valid boolean');
  }
  if (body.messages === undefined) throw bad('messages: Field required');
  if (!Array.isArray(body.messages)) throw bad('messages: Input should be a valid list');
  if (body.messages.length === 0) throw bad('messages: at least one message is required');
  if (body.temperature !== undefined && (typeof body.temperature !== 'number' || body.temperature < 0 || body.temperature > 1)) {
    throw bad('temperature: Input should be less than or equal to 1');
  }
  if (body.stop_sequences !== undefined && (!Array.isArray(body.stop_sequences) || body.stop_sequences.some((s: unknown) => typeof s !== 'string'))) {
    throw bad('stop_sequences: Input should be a valid list of strings');
  }
  if (body.system !== undefined && typeof body.system !== 'string') {
    if (!Array.isArray(body.system)) throw bad('system: Input should be a valid string or list');
    body.system.forEach((b: any, i: number) => {
      if (b?.type !== 'text' || typeof b.text !== 'string') throw bad(`system.${i}: Input should be a text block`);
    });
  }
  const thinking = body.thinking;
  if (route === 'messages' && thinking?.type === 'enabled') {
    if (!Number.isInteger(thinking.budget_tokens) || thinking.budget_tokens < 1024) throw bad('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
    if (body.max_tokens <= thinking.budget_tokens) throw bad('`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size');
  }
  const names = new Set<string>();
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) throw bad('tools: Input should be a valid list');
    body.tools.forEach((t: any, i: number) => {
      if (typeof t?.name !== 'string' || !/^[a-zA-Z0-9_-]{1,128}$/.test(t.name)) throw bad(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
      if ((t.type === undefined || t.type === 'custom') && (typeof t.input_schema !== 'object' || t.input_schema === null)) throw bad(`tools.${i}.custom.input_schema: Field required`);
      if (names.has(t.name)) throw bad('tools: Tool names must be unique.');
      names.add(t.name);
    });
  }
  const messages: any[] = body.messages;
  messages.forEach((m, i) => {
    if (typeof m !== 'object' || m === null) throw bad(`messages.${i}: Input should be a valid dictionary`);
    if (!ROLES.has(m.role)) throw bad(`messages.${i}.role: Input should be 'user', 'assistant' or 'system'`);
    const last = i === messages.length - 1;
    if (typeof m.content === 'string') {
      if (m.content === '' && !(last && m.role === 'assistant')) throw bad(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`);
      return;
    }
    if (!Array.isArray(m.content)) throw bad(`messages.${i}.content: Input should be a valid string or list`);
    if (m.content.length === 0 && !(last && m.role === 'assistant')) throw bad(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`);
    m.content.forEach((b: any, j: number) => {
      if (typeof b?.type !== 'string') throw bad(`messages.${i}.content.${j}.type: Field required`);
      if (b.type === 'text' && (typeof b.text !== 'string' || b.text === '')) throw bad(`messages: text content blocks must be non-empty`);
    });
  });
  // tool_use ↔ tool_result pairing: every tool_use of an assistant turn is answered in the next message.
  messages.forEach((m, i) => {
    const uses = blocksOf(m).filter((b) => b.type === 'tool_use').map((b) => String(b.id));
    const next = messages[i + 1];
    if (uses.length && m.role === 'assistant' && next) {
      const results = new Set(blocksOf(next).filter((b) => b.type === 'tool_result').map((b) => String(b.tool_use_id)));
      const missing = uses.filter((id) => !results.has(id));
      if (missing.length) {
        throw bad(`messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`);
      }
    }
    const prevUses = new Set(i > 0 ? blocksOf(messages[i - 1]).filter((b) => b.type === 'tool_use').map((b) => String(b.id)) : []);
    blocksOf(m).forEach((b, j) => {
      if (b.type === 'tool_result' && !prevUses.has(String(b.tool_use_id))) {
        throw bad(`messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`);
      }
    });
  });
}

function blocksOf(m: any): any[] {
  return Array.isArray(m?.content) ? m.content : [];
}

/**
 * The prompt as units in Anthropic's order (each tool; each system block, or the system string; each content
 * block of each message, or its string), each with its token count, the hash of the prompt up to it (model
 * included, cache_control left out) and its breakpoint's ttl. Checks the breakpoints as Anthropic does: at most
 * 4, `{type: "ephemeral", ttl?: "5m" | "1h"}`, and no 1h breakpoint after a 5m one.
 */
function promptUnits(body: any): PromptUnit[] {
  const bad = (message: string) => new RequestError(400, 'invalid_request_error', message);
  const units: PromptUnit[] = [];
  let hash = createHash('sha256').update(`model:${body.model}`).digest('hex');
  const add = (where: string, marked: any, content: unknown, text: string) => {
    hash = createHash('sha256').update(hash).update(JSON.stringify(content)).digest('hex');
    const unit: PromptUnit = { tokens: fakeTokenCount(text), hash };
    const cc = marked?.cache_control;
    if (cc !== undefined && cc !== null) {
      if (typeof cc !== 'object' || cc.type !== 'ephemeral') throw bad(`${where}.cache_control.type: Input should be 'ephemeral'`);
      if (cc.ttl !== undefined && cc.ttl !== '5m' && cc.ttl !== '1h') throw bad(`${where}.cache_control.ttl: Input should be '5m' or '1h'`);
      unit.ttl = cc.ttl ?? '5m';
    }
    units.push(unit);
  };
  const withoutMark = (block: any) => {
    if (typeof block !== 'object' || block === null) return block;
    const { cache_control: _cc, ...rest } = block;
    return rest;
  };
  (Array.isArray(body.tools) ? body.tools : []).forEach((tool: any, i: number) => {
    const clean = withoutMark(tool);
    add(`tools.${i}`, tool, ['tool', clean], JSON.stringify(clean));
  });
  if (typeof body.system === 'string') add('system', null, ['system', body.system], body.system);
  else if (Array.isArray(body.system)) body.system.forEach((b: any, i: number) => add(`system.${i}`, b, ['system', withoutMark(b)], String(b?.text ?? '')));
  const messages: any[] = Array.isArray(body.messages) ? body.messages : [];
  messages.forEach((m, i) => {
    if (typeof m?.content === 'string') return add(`messages.${i}`, null, ['message', m.role, m.content], m.content);
    blocksOf(m).forEach((b, j) => {
      const clean = withoutMark(b);
      add(`messages.${i}.content.${j}`, b, [j === 0 ? 'message' : 'block', m.role, clean], b?.type === 'text' ? String(b.text) : JSON.stringify(clean));
    });
  });
  // A top-level cache_control marks the last block of the last message (unless it is marked already).
  const top = body.cache_control;
  if (top !== undefined && top !== null && units.length && messages.length) {
    if (typeof top !== 'object' || top.type !== 'ephemeral') throw bad(`cache_control.type: Input should be 'ephemeral'`);
    if (top.ttl !== undefined && top.ttl !== '5m' && top.ttl !== '1h') throw bad(`cache_control.ttl: Input should be '5m' or '1h'`);
    const last = units[units.length - 1];
    last.ttl ??= top.ttl ?? '5m';
  }
  const marked = units.filter((u) => u.ttl);
  if (marked.length > 4) throw bad(`A maximum of 4 blocks with cache_control may be provided. Found ${marked.length}.`);
  const firstShort = marked.findIndex((u) => u.ttl === '5m');
  if (firstShort >= 0 && marked.slice(firstShort).some((u) => u.ttl === '1h')) {
    throw bad("a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`.");
  }
  return units;
}

// ---- HTTP helpers ----

function sseEvent(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Resolves once the data is handed to the socket, so that a later destroy cannot discard it. */
function write(res: ServerResponse, data: string): Promise<boolean> {
  return new Promise((resolve) => res.write(data, (err) => resolve(!err)));
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendRaw(res, status, JSON.stringify(body));
}

function sendRaw(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

// As its own process: `FAKE_ANTHROPIC_PORT=0 npx ts-node test/support/fake-anthropic.ts` prints its base URL on
// stdout and is steered with the /_fake/ control routes.
if (require.main === module) {
  startFakeAnthropic(Number(process.env.FAKE_ANTHROPIC_PORT ?? 0)).then((fake) => {
    process.stdout.write(`${fake.url}\n`);
    process.on('SIGTERM', () => void fake.close().then(() => process.exit(0)));
  });
}
