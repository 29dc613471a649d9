import { IncomingMessage, ServerResponse } from 'node:http';
import { answerUsage, messageEvents, outputFor } from './fake-anthropic-answer';
import { cacheUsage, InputUsage } from './fake-anthropic-cache';
import { ANTHROPIC_VERSIONS, betasOf, checkBody, promptUnits, RequestError } from './fake-anthropic-request';
import { searchCalls } from './fake-anthropic-search';
import { AnthropicFailureMode, AnthropicRecordedRequest, AnthropicReply, ERROR_STATUS, FakeWebSearch } from './fake-anthropic-types';
import { FakeServer, parseJson, readAll, sendRaw, serveAsProcess, sleep, splitUrl, write } from './fake-server';
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
 *   `cache_control` breakpoints against a per-instance prompt cache (`FakeAnthropic.usageFor`); `service_tier`,
 *   `inference_geo`, `speed` and `server_tool_use` as the price options and server tools of the request and the
 *   knobs below make them (fake-anthropic-answer.ts `answerUsage`). `speed` needs fast mode's beta header.
 * - The web search server tool, run when a request offers it and `webSearch` says what it finds
 *   (fake-anthropic-search.ts): server_tool_use and web_search_tool_result blocks, JSON and streamed.
 */

export type { AnthropicFailureMode, AnthropicRecordedRequest, AnthropicReply, AnthropicUsage, FakeWebSearch } from './fake-anthropic-types';

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
  /**
   * The reply to each request, chosen from its body (a scripted conversation such as Claude Code's tool loop);
   * undefined from it, or no function: `reply`.
   */
  replyFor: ((body: any) => AnthropicReply | undefined) | null = null;
  /** What the web search tool finds when a request offers it; null: the model does not search. */
  webSearch: FakeWebSearch | null = null;
  /** usage.service_tier when the request allows Priority Tier (`service_tier` absent or `auto`): `priority` as an account with that capacity. */
  serviceTier: 'standard' | 'priority' = 'standard';
  /** usage.inference_geo when the request names none: `not_available`, as Anthropic reports it. */
  defaultInferenceGeo = 'not_available';
  /** Fast mode asked for (`speed: "fast"`) and run at standard speed: usage.speed `standard`, a downgrade. */
  fastModeDowngrade = false;
  private readonly sseSeed = mixSeed(SSE_BASE_SEED, 1000 + ++fakesStarted);
  private ids = 0;
  private toolIds = 0;

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
    this.replyFor = null;
    this.webSearch = null;
    this.serviceTier = 'standard';
    this.defaultInferenceGeo = 'not_available';
    this.fastModeDowngrade = false;
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
   * The input side of the usage this request would get now, from the prompt cache as it stands; with `write`, the
   * cache is updated as the answer does (fake-anthropic-cache.ts says how breakpoints are read and written).
   */
  usageFor(body: any, write = false): InputUsage {
    return cacheUsage(this.cache, this.now(), body, write);
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
      checkBody(record.body, route, betasOf(req.headers['anthropic-beta']));
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
    const reply = this.replyFor?.(body) ?? this.reply;
    const output = outputFor(reply, body, this.webSearch, searchCalls(this.webSearch, body, () => `srvtoolu_01Fake${String(++this.toolIds).padStart(12, '0')}`));
    const usage = answerUsage(this.usageFor(body, true), output, body, this);
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

    const events = messageEvents(message, output, usage, reply);

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

  /**
   * Beside the scaffold's control routes (fake-server.ts): POST /_fake/reply {reply}; POST /_fake/web-search
   * {queries, results} or null; POST /_fake/service {serviceTier?, defaultInferenceGeo?, fastModeDowngrade?}.
   */
  protected controlMore(path: string, body: any): boolean {
    if (path === '/_fake/reply') this.reply = body;
    else if (path === '/_fake/web-search') this.webSearch = Array.isArray(body?.queries) ? body : null;
    else if (path === '/_fake/service') {
      this.serviceTier = body.serviceTier ?? this.serviceTier;
      this.defaultInferenceGeo = body.defaultInferenceGeo ?? this.defaultInferenceGeo;
      this.fastModeDowngrade = body.fastModeDowngrade ?? this.fastModeDowngrade;
    } else return false;
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
