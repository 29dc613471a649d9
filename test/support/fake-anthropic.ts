import { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { FakeServer, parseJson, readAll, sendRaw, serveAsProcess, sleep, splitUrl, write } from './fake-server';
import { messageEvents, outputFor } from './fake-anthropic-answer';
import { ANTHROPIC_VERSIONS, checkBody, promptUnits, RequestError, TTL_MS } from './fake-anthropic-request';
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
 * - The key only in `x-api-key` (https://docs.anthropic.com/en/api/overview#authentication): a wrong or missing one
 *   is 401 `authentication_error`, and an API key sent as `Authorization: Bearer` is 401 "OAuth authentication is
 *   currently not supported."; `anthropic-version` must be one of Anthropic's versions (400 otherwise,
 *   https://docs.anthropic.com/en/api/versioning).
 * - Bodies are validated where Anthropic refuses them (400 `invalid_request_error` with Anthropic's wording):
 *   an unknown top-level field is "<field>: Extra inputs are not permitted"; a model outside `fake.models` is 404
 *   `not_found_error`.
 * - Usage: input tokens counted by `fakeTokenCount` (fake-tokens.ts), cache reads and writes computed from the request's
 *   `cache_control` breakpoints against a per-instance prompt cache (`FakeAnthropic.usageFor`).
 */

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
/** Fakes started in this test file so far: fake k's framings are seeded from (SSE_BASE_SEED, 1000 + k). */
let fakesStarted = 0;


export class FakeAnthropic extends FakeServer<AnthropicRecordedRequest, AnthropicFailureMode> {
  protected readonly label = 'fake anthropic';
  /** The only key accepted, in `x-api-key`. */
  apiKey = 'sk-ant-fake-key';
  /** Models served; any other is 404 not_found_error (`model: <name>`). */
  models = new Set(FakeAnthropic.defaultModels());
  reply: AnthropicReply = FakeAnthropic.defaultReply();
  failureMessage = 'The fake Anthropic upstream rejected this request.';
  /** Sent as `retry-after` by `status429` (none when null). */
  retryAfterS: number | null = 1;
  /** How SSE answers are cut into writes (test/support/sse-framing.ts): random by default. */
  sseFraming: SseFraming = 'random';
  /** The clock of the prompt cache (tests move it to expire entries). */
  now: () => number = () => Date.now();
  /** The prompt cache: prefix hash → expiry (ms on `now()`). */
  readonly cache = new Map<string, number>();
  private readonly sseSeed = mixSeed(SSE_BASE_SEED, 1000 + ++fakesStarted);
  private ids = 0;

  static defaultReply(): AnthropicReply {
    return { text: 'Hello from the fake Anthropic upstream.' };
  }

  static defaultModels(): string[] {
    return ['claude-opus-4-7', 'claude-opus-4-6', 'claude-sonnet-4-6', 'claude-opus-4-5', 'claude-sonnet-4-5', 'claude-sonnet-4-5-20250929', 'claude-haiku-4-5', 'claude-haiku-4-5-20251001', 'claude-opus-4-1'];
  }

  /** Back to normal answers, default reply, models and key, an empty record and an empty prompt cache. */
  resetState(): void {
    super.resetState();
    this.cache.clear();
    this.reply = FakeAnthropic.defaultReply();
    this.models = new Set(FakeAnthropic.defaultModels());
    this.apiKey = 'sk-ant-fake-key';
    this.failureMessage = 'The fake Anthropic upstream rejected this request.';
    this.retryAfterS = 1;
    this.sseFraming = 'random';
    this.now = () => Date.now();
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

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = (await readAll(req)).toString('utf8');
    const { path, query } = splitUrl(req.url);
    if (path.startsWith('/_fake/')) return this.control(path, raw, res);
    const record: AnthropicRecordedRequest = { method: req.method ?? '', path, query, headers: req.headers, rawBody: raw, body: parseJson(raw), aborted: false, finished: false };
    const destroy = this.track(record, req, res);
    const requestId = this.nextRequestId();
    res.setHeader('request-id', requestId);
    const fail = (status: number, type: string, message: string) => sendJson(res, status, { type: 'error', error: { type, message }, request_id: requestId });

    const model = typeof record.body?.model === 'string' ? record.body.model : '';
    const mode = this.nextMode(model);
    if (mode === 'hang') return;
    if (mode === 'reset') return destroy();
    await this.gate.passed();
    if (this.responseDelayMs) await sleep(this.responseDelayMs);
    if (res.destroyed) return;

    const route = req.method === 'POST' && path === '/v1/messages' ? 'messages' : req.method === 'POST' && path === '/v1/messages/count_tokens' ? 'count' : null;
    if (!route) return fail(404, 'not_found_error', 'Not Found');
    const refused = this.refusedHeaders(req);
    if (refused) return fail(refused.status, refused.type, refused.message);

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
      checkBody(record.body, route);
      if (!this.models.has(record.body.model)) throw new RequestError(404, 'not_found_error', `model: ${record.body.model}`);
      promptUnits(record.body); // cache_control checks
    } catch (err) {
      if (err instanceof RequestError) return fail(err.status, err.type, err.message);
      throw err;
    }

    if (route === 'count') {
      const answer = JSON.stringify({ input_tokens: FakeAnthropic.countInputTokens(record.body) });
      if (mode === 'cutStream') return this.cutJson(res, answer, destroy);
      return sendRaw(res, 200, 'application/json', answer);
    }
    return this.answerMessage(record, res, requestId, mode, destroy);
  }

  /**
   * The key and version headers as Anthropic checks them: the key only in `x-api-key` (an API key as a bearer token
   * is taken for an OAuth token, which the API refuses), then `anthropic-version`, present and one Anthropic knows.
   */
  private refusedHeaders(req: IncomingMessage): RequestError | null {
    const key = req.headers['x-api-key'];
    if (key === undefined && req.headers.authorization !== undefined) return new RequestError(401, 'authentication_error', 'OAuth authentication is currently not supported.');
    if (key !== this.apiKey) return new RequestError(401, 'authentication_error', key ? 'invalid x-api-key' : 'x-api-key header is required');
    const version = req.headers['anthropic-version'];
    if (version === undefined) return new RequestError(400, 'invalid_request_error', 'anthropic-version: header is required');
    if (!ANTHROPIC_VERSIONS.includes(String(version))) return new RequestError(400, 'invalid_request_error', `anthropic-version: "${String(version)}" is not a valid version`);
    return null;
  }

  private async cutJson(res: ServerResponse, answer: string, destroy: () => void): Promise<void> {
    res.writeHead(200, { 'content-type': 'application/json' });
    await write(res, answer.slice(0, Math.floor(answer.length / 2)));
    destroy();
  }

  private async answerMessage(record: AnthropicRecordedRequest, res: ServerResponse, requestId: string, mode: AnthropicFailureMode | null, destroy: () => void): Promise<void> {
    const body = record.body;
    const output = outputFor(this.reply, body);
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
      return sendRaw(res, 200, 'application/json', answer);
    }

    const events = messageEvents(message, output, usage, this.reply);

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


  /** POST /_fake/reply {reply}, beside the scaffold's control routes (fake-server.ts). */
  protected controlMore(path: string, body: any): boolean {
    if (path !== '/_fake/reply') return false;
    this.reply = body;
    return true;
  }
}

export async function startFakeAnthropic(port = 0): Promise<FakeAnthropic> {
  return new FakeAnthropic().start(port);
}

// ---- HTTP helpers ----

function sseEvent(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendRaw(res, status, 'application/json', JSON.stringify(body));
}

// As its own process: `FAKE_ANTHROPIC_PORT=0 npx ts-node test/support/fake-anthropic.ts` prints its base URL on
// stdout and is steered with the /_fake/ control routes.
serveAsProcess(module, startFakeAnthropic, 'FAKE_ANTHROPIC_PORT');
