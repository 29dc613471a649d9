import { createHash } from 'node:crypto';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { fakeTokenCount } from './fake-anthropic';
import { mixSeed, SSE_BASE_SEED, SseFraming, SseWriter } from './sse-framing';

/**
 * A fake Gemini API (https://ai.google.dev/api) over real HTTP on 127.0.0.1 (base URL `fake.url`, without a
 * version path, as `https://generativelanguage.googleapis.com` is given to @google/genai's httpOptions.baseUrl and
 * to a provider's `base_url`). Written from Google's API reference (models.generateContent,
 * models.streamGenerateContent, GenerateContentResponse, UsageMetadata, FinishReason), its troubleshooting page
 * (error statuses), the context caching and thinking guides, and @google/genai's stream parser.
 *
 * - `POST /v1beta/models/{model}:generateContent` (JSON) and `:streamGenerateContent?alt=sse` (SSE: one
 *   `data: <GenerateContentResponse>` event per piece, CRLF CRLF between them, and NO end marker: the body
 *   simply ends; without `alt=sse`, one JSON array of the same responses). `/v1/` paths are served alike.
 * - The key in `x-goog-api-key` or `?key=`: none is 403 PERMISSION_DENIED, a wrong one 400 INVALID_ARGUMENT with
 *   reason API_KEY_INVALID, as Google answers. A model outside `fake.models` is 404 NOT_FOUND.
 * - Bodies are validated where Gemini refuses them (400 INVALID_ARGUMENT, Google's wording): unknown top-level
 *   fields, empty contents, a role other than user/model, empty parts, a function call or response without a name,
 *   generationConfig out of range, an unknown cachedContent (403, as Google answers).
 * - Usage from the request, with fakeTokenCount (fake-anthropic.ts): promptTokenCount counts systemInstruction,
 *   tools, contents (258 per image, Gemini's figure for a small image) and the named cachedContent;
 *   cachedContentTokenCount is that cached content's, else the implicit cache's (the longest prefix of
 *   systemInstruction, tools and contents this fake served before for the model, from `implicitCacheMinTokens`
 *   on); thoughtsTokenCount counts the reply's thought when thinking is on (thinkingBudget not 0), its text sent
 *   as `thought: true` parts only with includeThoughts; candidatesTokenCount counts every candidate's parts.
 */

/** Gemini's count for an image of at most 384 px on both sides (https://ai.google.dev/gemini-api/docs/tokens). */
export const IMAGE_TOKENS = 258;

export type GeminiFailureMode =
  | 'status400' // INVALID_ARGUMENT carrying `failureMessage`
  | 'status403' // PERMISSION_DENIED
  | 'status404' // NOT_FOUND
  | 'status429' // RESOURCE_EXHAUSTED, with RetryInfo and QuotaFailure details
  | 'status500' // INTERNAL
  | 'status503' // UNAVAILABLE ("The model is overloaded")
  | 'cutStream' // a stream: N events (default: half of them), then the socket is destroyed; JSON: part of the body, then destroyed
  | 'endEarly' // a stream: N events (default: half of them), then the body ends cleanly, no finishReason sent; JSON: as normal
  | 'errorEvent' // a stream: N events (default: half of them), then `data: {"error": {500 INTERNAL}}` and the end; JSON: a 500
  | 'reset' // the socket is destroyed before any answer
  | 'hang'; // never answers

const STATUS_OF: Record<string, { code: number; status: string; message: string }> = {
  status403: { code: 403, status: 'PERMISSION_DENIED', message: 'The caller does not have permission' },
  status404: { code: 404, status: 'NOT_FOUND', message: 'Requested entity was not found.' },
  status429: {
    code: 429,
    status: 'RESOURCE_EXHAUSTED',
    message: 'You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.',
  },
  status500: { code: 500, status: 'INTERNAL', message: 'An internal error has occurred. Please retry or try changing your input.' },
  status503: { code: 503, status: 'UNAVAILABLE', message: 'The model is overloaded. Please try again later.' },
};

/** The fake's answer to the next requests. */
export interface GeminiReply {
  /** The text part ('' for none). */
  text: string;
  /** The model's thoughts: counted when thinking is on, sent as `thought: true` parts with includeThoughts. */
  thought?: string;
  /** functionCall parts after the text; `id` only when given (the Gemini API mostly sends none). */
  functionCalls?: { name: string; args: Record<string, unknown>; id?: string }[];
  /** finishReason when neither maxOutputTokens nor a stop sequence cut the answer (default STOP). */
  finishReason?: string;
  /** The prompt is blocked: no candidates, promptFeedback.blockReason. */
  blockReason?: string;
  /** usageMetadata.toolUsePromptTokenCount (a built-in tool's results read as input). */
  toolUsePromptTokens?: number;
  /** Tokens per streamed text part (default 3). */
  deltaTokens?: number;
}

export interface GeminiUsageMetadata {
  promptTokenCount: number;
  candidatesTokenCount?: number;
  totalTokenCount: number;
  cachedContentTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
  promptTokensDetails: { modality: string; tokenCount: number }[];
}

export interface GeminiRecordedRequest {
  method: string;
  /** The path without the query string, e.g. /v1beta/models/gemini-2.5-flash:generateContent. */
  path: string;
  /** The query string with its `?`, or ''. */
  query: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** The parsed JSON body; undefined when it did not parse. */
  body: any;
  /** The model named in the path. */
  model: string;
  stream: boolean;
  /** What the fake answered on a 200 (its usage as sent). */
  answered?: { usage: GeminiUsageMetadata; finishReason: string | null; parts: unknown[] };
  aborted: boolean;
  finished: boolean;
}

class RequestError extends Error {
  constructor(
    readonly code: number,
    readonly status: string,
    message: string,
    readonly details?: unknown[],
  ) {
    super(message);
  }
}

let fakesStarted = 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const TOP_LEVEL = new Set(['contents', 'tools', 'toolConfig', 'safetySettings', 'systemInstruction', 'generationConfig', 'cachedContent', 'model', 'labels']);
const GENERATION_CONFIG = new Set([
  'stopSequences', 'responseMimeType', 'responseSchema', 'responseJsonSchema', 'responseModalities', 'candidateCount', 'maxOutputTokens', 'temperature',
  'topP', 'topK', 'seed', 'presencePenalty', 'frequencyPenalty', 'responseLogprobs', 'logprobs', 'enableEnhancedCivicAnswers', 'speechConfig', 'thinkingConfig',
  'mediaResolution', 'imageConfig',
]);

export class FakeGemini {
  url = '';
  apiKey = 'AIzaSyFake-gemini-key';
  models = new Set(FakeGemini.defaultModels());
  reply: GeminiReply = FakeGemini.defaultReply();
  /** Explicit caches (`cachedContents/<id>` → its token count) a request may name in `cachedContent`. */
  cachedContents = new Map<string, number>();
  /** The shortest prefix the implicit cache reports (Gemini 2.5 Flash: 1,024 tokens). */
  implicitCacheMinTokens = 1024;
  responseDelayMs = 0;
  chunkDelayMs = 0;
  failureMessage = 'Request contains an invalid argument.';
  faultAfterEvents: number | null = null;
  failure: GeminiFailureMode | null = null;
  failureByModel: Record<string, GeminiFailureMode> = {};
  sseFraming: SseFraming = 'random';
  readonly requests: GeminiRecordedRequest[] = [];
  /** Prefix hashes served so far (implicit caching) → their token count. */
  readonly implicitCache = new Map<string, number>();
  private readonly queued: GeminiFailureMode[] = [];
  private readonly sseSeed = mixSeed(SSE_BASE_SEED, 2000 + ++fakesStarted);
  private ids = 0;
  private server!: Server;

  static defaultReply(): GeminiReply {
    return { text: 'Hello from the fake Gemini upstream.' };
  }

  static defaultModels(): string[] {
    return ['gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-2.5-flash-lite', 'gemini-2.0-flash', 'gemini-3-pro-preview'];
  }

  failNext(mode: GeminiFailureMode, times = 1): void {
    for (let i = 0; i < times; i++) this.queued.push(mode);
  }

  resetState(): void {
    this.requests.length = 0;
    this.queued.length = 0;
    this.implicitCache.clear();
    this.cachedContents.clear();
    this.implicitCacheMinTokens = 1024;
    this.failure = null;
    this.failureByModel = {};
    this.reply = FakeGemini.defaultReply();
    this.models = new Set(FakeGemini.defaultModels());
    this.apiKey = 'AIzaSyFake-gemini-key';
    this.responseDelayMs = 0;
    this.chunkDelayMs = 0;
    this.faultAfterEvents = null;
    this.failureMessage = 'Request contains an invalid argument.';
    this.sseFraming = 'random';
  }

  aborted(): GeminiRecordedRequest[] {
    return this.requests.filter((r) => r.aborted);
  }

  async waitFor(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error('fake gemini: condition not met in time');
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

  /** The prompt's token count as this fake reckons it (promptTokenCount less a named cachedContent's). */
  static countPromptTokens(body: any): number {
    return promptUnits(body).reduce((sum, u) => sum + u.tokens, 0);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = (await readAll(req)).toString('utf8');
    const [path, ...rest] = (req.url ?? '').split('?');
    const query = new URLSearchParams(rest.join('?'));
    const route = /^\/(v1beta|v1)\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(path);
    const record: GeminiRecordedRequest = {
      method: req.method ?? '',
      path,
      query: rest.length ? `?${rest.join('?')}` : '',
      headers: req.headers,
      rawBody: raw,
      body: undefined,
      model: route ? decodeURIComponent(route[2]) : '',
      stream: route?.[3] === 'streamGenerateContent',
      aborted: false,
      finished: false,
    };
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
    const fail = (e: RequestError) => sendJson(res, e.code, { error: { code: e.code, message: e.message, status: e.status, ...(e.details && { details: e.details }) } });

    const mode = this.failureByModel[record.model] ?? this.queued.shift() ?? this.failure;
    if (mode === 'hang') return;
    if (mode === 'reset') return destroy();
    if (this.responseDelayMs) await sleep(this.responseDelayMs);
    if (res.destroyed) return;
    if (!route || req.method !== 'POST') return fail(new RequestError(404, 'NOT_FOUND', `The requested URL ${path} was not found on this server.`));

    const key = req.headers['x-goog-api-key'] ?? query.get('key');
    if (!key) {
      return fail(new RequestError(403, 'PERMISSION_DENIED', "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."));
    }
    if (key !== this.apiKey) {
      return fail(
        new RequestError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [
          { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } },
        ]),
      );
    }
    if (mode === 'status400') return fail(new RequestError(400, 'INVALID_ARGUMENT', this.failureMessage));
    if (mode === 'status429') {
      return fail(
        new RequestError(429, 'RESOURCE_EXHAUSTED', STATUS_OF.status429.message, [
          { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests', quotaId: 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier' }] },
          { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' },
        ]),
      );
    }
    const scripted = mode ? STATUS_OF[mode] : undefined;
    if (scripted) return fail(new RequestError(scripted.code, scripted.status, scripted.message));
    if (mode === 'errorEvent' && !record.stream) return fail(new RequestError(500, 'INTERNAL', STATUS_OF.status500.message));

    try {
      if (!this.models.has(record.model)) {
        throw new RequestError(404, 'NOT_FOUND', `models/${record.model} is not found for API version ${route[1]}, or is not supported for ${route[3]}. Call ListModels to see the list of available models and their supported methods.`);
      }
      if (record.body === null || typeof record.body !== 'object' || Array.isArray(record.body)) {
        throw new RequestError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received. Expected an object.');
      }
      validateBody(record.body);
      if (record.body.cachedContent !== undefined && !this.cachedContents.has(record.body.cachedContent)) {
        throw new RequestError(403, 'PERMISSION_DENIED', `CachedContent not found (or permission denied)`);
      }
    } catch (err) {
      if (err instanceof RequestError) return fail(err);
      throw err;
    }
    return this.answer(record, res, query.get('alt') === 'sse', mode, destroy);
  }

  /** The usage of this request's prompt: its units, the named or implicit cache; the implicit cache learns the prefixes. */
  private promptUsage(record: GeminiRecordedRequest): { prompt: number; cached: number } {
    const units = promptUnits(record.body);
    const explicit = record.body.cachedContent !== undefined ? (this.cachedContents.get(record.body.cachedContent) ?? 0) : 0;
    let position = 0;
    let implicit = 0;
    for (const unit of units) {
      position += unit.tokens;
      const key = `${record.model}:${unit.hash}`;
      if (this.implicitCache.has(key) && position >= this.implicitCacheMinTokens) implicit = position;
      this.implicitCache.set(key, position);
    }
    return { prompt: position + explicit, cached: explicit > 0 ? explicit : implicit };
  }

  private async answer(record: GeminiRecordedRequest, res: ServerResponse, sse: boolean, mode: GeminiFailureMode | null, destroy: () => void): Promise<void> {
    const body = record.body;
    const reply = this.reply;
    const { prompt, cached } = this.promptUsage(record);
    const config = body.generationConfig ?? {};
    const thinking = config.thinkingConfig ?? {};
    const thinkingOn = reply.thought !== undefined && thinking.thinkingBudget !== 0;
    const responseId = `fakeResp${String(++this.ids).padStart(10, '0')}`;
    const modelVersion = record.model;
    const usage = (candidates: number, thoughts: number): GeminiUsageMetadata => ({
      promptTokenCount: prompt,
      ...(candidates > 0 && { candidatesTokenCount: candidates }),
      totalTokenCount: prompt + candidates + thoughts + (reply.toolUsePromptTokens ?? 0),
      ...(cached > 0 && { cachedContentTokenCount: cached }),
      ...(thoughts > 0 && { thoughtsTokenCount: thoughts }),
      ...(reply.toolUsePromptTokens && { toolUsePromptTokenCount: reply.toolUsePromptTokens }),
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
    });

    const responses: unknown[] = [];
    if (reply.blockReason) {
      const finalUsage = usage(0, 0);
      record.answered = { usage: finalUsage, finishReason: null, parts: [] };
      responses.push({ promptFeedback: { blockReason: reply.blockReason }, usageMetadata: finalUsage, modelVersion, responseId });
    } else {
      const output = outputFor(reply, config);
      const thoughtText = thinkingOn ? cut(reply.thought!, thinking.thinkingBudget > 0 ? thinking.thinkingBudget : Infinity) : '';
      const thoughts = thinkingOn ? fakeTokenCount(thoughtText) : 0;
      const n = Number.isInteger(config.candidateCount) ? config.candidateCount : 1;
      const includeThoughts = thinkingOn && thinking.includeThoughts === true && thoughtText !== '';
      const parts: any[] = [...(includeThoughts ? [{ text: thoughtText, thought: true }] : []), ...output.parts];
      const finalUsage = usage(output.tokens * n, thoughts * n);
      record.answered = { usage: finalUsage, finishReason: output.finishReason, parts };
      if (!record.stream) {
        const candidates = Array.from({ length: n }, (_, index) => ({ content: { parts, role: 'model' }, finishReason: output.finishReason, index }));
        responses.push({ candidates, usageMetadata: finalUsage, modelVersion, responseId });
      } else {
        // Pieces: thoughts, then text in deltaTokens-token parts, then each function call whole; usage grows with them.
        const pieces: any[] = [];
        const size = this.reply.deltaTokens ?? 3;
        const grouped = (text: string, extra: object) => {
          const tokens = tokenPieces(text);
          for (let i = 0; i < tokens.length; i += size) pieces.push({ text: tokens.slice(i, i + size).join(''), ...extra });
        };
        if (includeThoughts) grouped(thoughtText, { thought: true });
        for (const part of output.parts) {
          if (typeof part.text === 'string') grouped(part.text, {});
          else pieces.push(part);
        }
        if (pieces.length === 0) pieces.push({ text: '' });
        let produced = 0;
        pieces.forEach((part, i) => {
          const last = i === pieces.length - 1;
          if (!part.thought) produced += typeof part.text === 'string' ? fakeTokenCount(part.text) : fakeTokenCount(part.functionCall.name) + fakeTokenCount(JSON.stringify(part.functionCall.args));
          const candidates = Array.from({ length: n }, (_, index) => ({ content: { parts: [part], role: 'model' }, ...(last && { finishReason: output.finishReason }), index }));
          responses.push({ candidates, usageMetadata: last ? finalUsage : usage(produced * n, thoughts * n), modelVersion, responseId });
        });
      }
    }

    if (!record.stream) {
      const answer = JSON.stringify(responses[0]);
      if (mode === 'cutStream') return this.cutJson(res, answer, destroy);
      return sendJson(res, 200, responses[0]);
    }
    if (!sse) {
      // Without alt=sse, Gemini streams one JSON array of the responses.
      return sendJson(res, 200, responses);
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });
    const writer = new SseWriter(res, this.sseFraming, mixSeed(this.sseSeed, this.requests.length));
    // Google ends each event with CRLF CRLF; the random framing writes LF and picks its own line ends.
    const event = (data: unknown) => `data: ${JSON.stringify(data)}${this.sseFraming === 'exact' ? '\r\n\r\n' : '\n\n'}`;
    const faultAt = mode === 'cutStream' || mode === 'errorEvent' || mode === 'endEarly' ? Math.min(this.faultAfterEvents ?? Math.floor(responses.length / 2), responses.length) : Infinity;
    for (let i = 0; i < responses.length; i++) {
      if (res.destroyed) return;
      if (i === faultAt || (i > 0 && this.chunkDelayMs)) await writer.flush();
      if (i === faultAt && mode === 'cutStream') return destroy();
      if (i === faultAt && mode === 'endEarly') return void res.end();
      if (i === faultAt) return writer.end(event({ error: { code: 500, message: STATUS_OF.status500.message, status: 'INTERNAL' } }));
      if (i > 0 && this.chunkDelayMs) await sleep(this.chunkDelayMs);
      if (res.destroyed) return;
      if (i === responses.length - 1) return writer.end(event(responses[i]));
      await writer.event(event(responses[i]));
    }
  }

  private async cutJson(res: ServerResponse, answer: string, destroy: () => void): Promise<void> {
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' });
    await new Promise((resolve) => res.write(answer.slice(0, Math.floor(answer.length / 2)), resolve));
    destroy();
  }
}

export async function startFakeGemini(port = 0): Promise<FakeGemini> {
  return new FakeGemini().start(port);
}

// ---- the answer ----

/** The reply's parts, cut by stopSequences (finish STOP) and maxOutputTokens (finish MAX_TOKENS), with their tokens. */
function outputFor(reply: GeminiReply, config: any): { parts: any[]; tokens: number; finishReason: string } {
  let budget = Number.isInteger(config.maxOutputTokens) ? config.maxOutputTokens : 8192;
  const parts: any[] = [];
  let text = reply.text;
  let stopped = false;
  for (const stop of Array.isArray(config.stopSequences) ? config.stopSequences : []) {
    const at = text.indexOf(stop);
    if (at >= 0) {
      text = text.slice(0, at);
      stopped = true;
    }
  }
  const textTokens = fakeTokenCount(text);
  if (textTokens > budget) {
    const kept = cut(text, budget);
    return { parts: kept ? [{ text: kept }] : [], tokens: budget, finishReason: 'MAX_TOKENS' };
  }
  budget -= textTokens;
  if (text) parts.push({ text });
  let tokens = textTokens;
  if (!stopped) {
    for (const call of reply.functionCalls ?? []) {
      const n = fakeTokenCount(call.name) + fakeTokenCount(JSON.stringify(call.args));
      if (n > budget) return { parts, tokens: tokens + budget, finishReason: 'MAX_TOKENS' };
      budget -= n;
      tokens += n;
      parts.push({ functionCall: { ...(call.id && { id: call.id }), name: call.name, args: call.args } });
    }
  }
  return { parts, tokens, finishReason: stopped ? 'STOP' : (reply.finishReason ?? 'STOP') };
}

/** The first `limit` tokens of a text. */
function cut(text: string, limit: number): string {
  return tokenPieces(text).slice(0, limit).join('');
}

/** The text's tokens with the whitespace before each (they concatenate back to the text). */
function tokenPieces(text: string): string[] {
  const pieces: string[] = [...(text.match(/\s*(?:[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_])/gu) ?? [])];
  const rest = text.slice(pieces.join('').length);
  if (rest) {
    if (pieces.length) pieces[pieces.length - 1] += rest;
    else pieces.push(rest);
  }
  return pieces;
}

// ---- the prompt: units in Gemini's order, each with its tokens and the hash of the prompt up to it ----

interface PromptUnit {
  tokens: number;
  hash: string;
}

function partTokens(part: any): number {
  if (typeof part?.text === 'string') return fakeTokenCount(part.text);
  if (part?.inlineData || part?.fileData) return IMAGE_TOKENS;
  if (part?.functionCall) return fakeTokenCount(String(part.functionCall.name)) + fakeTokenCount(JSON.stringify(part.functionCall.args ?? {}));
  if (part?.functionResponse) return fakeTokenCount(String(part.functionResponse.name)) + fakeTokenCount(JSON.stringify(part.functionResponse.response ?? {}));
  return fakeTokenCount(JSON.stringify(part ?? ''));
}

function promptUnits(body: any): PromptUnit[] {
  const units: PromptUnit[] = [];
  let hash = '';
  const add = (content: unknown, tokens: number) => {
    hash = createHash('sha256').update(hash).update(JSON.stringify(content)).digest('hex');
    units.push({ tokens, hash });
  };
  const system = body.systemInstruction;
  if (system) add(['system', system], (Array.isArray(system.parts) ? system.parts : []).reduce((s: number, p: any) => s + partTokens(p), 0));
  for (const tool of Array.isArray(body.tools) ? body.tools : []) add(['tool', tool], fakeTokenCount(JSON.stringify(tool)));
  for (const content of Array.isArray(body.contents) ? body.contents : []) {
    add(['content', content], (Array.isArray(content?.parts) ? content.parts : []).reduce((s: number, p: any) => s + partTokens(p), 0));
  }
  return units;
}

// ---- validation, as Gemini answers (400 INVALID_ARGUMENT) ----

function validateBody(body: any): void {
  const bad = (message: string) => new RequestError(400, 'INVALID_ARGUMENT', message);
  for (const name of Object.keys(body)) {
    if (!TOP_LEVEL.has(name)) throw bad(`Invalid JSON payload received. Unknown name "${name}": Cannot find field.`);
  }
  if (!Array.isArray(body.contents) || body.contents.length === 0) throw bad('* GenerateContentRequest.contents: contents is not specified\n');
  body.contents.forEach((content: any, i: number) => {
    if (content?.role !== undefined && content.role !== 'user' && content.role !== 'model') throw bad('Please use a valid role: user, model.');
    if (!Array.isArray(content?.parts) || content.parts.length === 0) throw bad(`* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.\n`);
    content.parts.forEach((part: any, j: number) => {
      if (part?.functionResponse !== undefined && (typeof part.functionResponse?.name !== 'string' || part.functionResponse.name === '')) {
        throw bad(`* GenerateContentRequest.contents[${i}].parts[${j}].function_response.name: Name cannot be empty.\n`);
      }
      if (part?.functionCall !== undefined && (typeof part.functionCall?.name !== 'string' || part.functionCall.name === '')) {
        throw bad(`* GenerateContentRequest.contents[${i}].parts[${j}].function_call.name: Name cannot be empty.\n`);
      }
      if (part?.inlineData !== undefined && (typeof part.inlineData?.mimeType !== 'string' || typeof part.inlineData?.data !== 'string')) {
        throw bad(`* GenerateContentRequest.contents[${i}].parts[${j}].inline_data.mime_type: mime_type cannot be empty.\n`);
      }
    });
  });
  const system = body.systemInstruction;
  if (system !== undefined && (!Array.isArray(system?.parts) || system.parts.some((p: any) => typeof p?.text !== 'string'))) {
    throw bad('* GenerateContentRequest.system_instruction.parts: only text parts are supported in system_instruction.\n');
  }
  for (const [t, tool] of (Array.isArray(body.tools) ? body.tools : []).entries()) {
    for (const [d, decl] of (Array.isArray(tool?.functionDeclarations) ? tool.functionDeclarations : []).entries()) {
      if (typeof decl?.name !== 'string' || !/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$/.test(decl.name)) {
        throw bad(`* GenerateContentRequest.tools[${t}].function_declarations[${d}].name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:) or dashes (-), with a maximum length of 64.\n`);
      }
      if (decl.parameters !== undefined && decl.parametersJsonSchema !== undefined) {
        throw bad(`* GenerateContentRequest.tools[${t}].function_declarations[${d}]: parameters and parameters_json_schema cannot both be set.\n`);
      }
    }
  }
  const mode = body.toolConfig?.functionCallingConfig?.mode;
  if (mode !== undefined && !['AUTO', 'ANY', 'NONE', 'VALIDATED', 'MODE_UNSPECIFIED'].includes(mode)) {
    throw bad(`Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), "${mode}"`);
  }
  const config = body.generationConfig;
  if (config !== undefined) {
    for (const name of Object.keys(config)) {
      if (!GENERATION_CONFIG.has(name)) throw bad(`Invalid JSON payload received. Unknown name "${name}" at 'generation_config': Cannot find field.`);
    }
    if (config.temperature !== undefined && (typeof config.temperature !== 'number' || config.temperature < 0 || config.temperature > 2)) {
      throw bad('* GenerateContentRequest.generation_config.temperature: temperature must be in the range [0.0, 2.0]\n');
    }
    if (config.maxOutputTokens !== undefined && (!Number.isInteger(config.maxOutputTokens) || config.maxOutputTokens < 1)) {
      throw bad('* GenerateContentRequest.generation_config.max_output_tokens: max_output_tokens must be positive.\n');
    }
    if (config.candidateCount !== undefined && (!Number.isInteger(config.candidateCount) || config.candidateCount < 1 || config.candidateCount > 8)) {
      throw bad('* GenerateContentRequest.generation_config.candidate_count: candidate_count must be in the range [1, 8]\n');
    }
    if (config.stopSequences !== undefined && (!Array.isArray(config.stopSequences) || config.stopSequences.length > 5)) {
      throw bad('* GenerateContentRequest.generation_config.stop_sequences: at most 5 stop sequences are allowed.\n');
    }
    const budget = config.thinkingConfig?.thinkingBudget;
    if (budget !== undefined && (!Number.isInteger(budget) || budget < -1 || budget > 32768)) {
      throw bad(`The thinking budget ${budget} is invalid. Please choose a value between -1 and 32768.`);
    }
  }
}

// ---- HTTP helpers ----

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
