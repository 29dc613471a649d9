import { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { FakeServer, parseJson, readAll, sendJson as sendJsonAs, sleep, splitUrl, write } from './fake-server';
import { cut, outputFor, promptUnits, RequestError, servedTier, validateBody } from './fake-gemini-request';
import { fakeTokenCount, tokenPieces } from './fake-tokens';

export { IMAGE_TOKENS } from './fake-gemini-request';
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
 * - Usage from the request, with fakeTokenCount (fake-tokens.ts): promptTokenCount counts systemInstruction,
 *   tools, contents (258 per image, Gemini's figure for a small image) and the named cachedContent;
 *   cachedContentTokenCount is that cached content's, else the implicit cache's (the longest prefix of
 *   systemInstruction, tools and contents this fake served before for the model, from `implicitCacheMinTokens`
 *   on); thoughtsTokenCount counts the reply's thought when thinking is on (thinkingBudget not 0), its text sent
 *   as `thought: true` parts only with includeThoughts; candidatesTokenCount counts every candidate's parts.
 * - Service tiers: the body's `serviceTier` (or `service_tier`) as Google documents it, any other value 400
 *   INVALID_ARGUMENT; every answer (JSON and streams) says the tier that served it in `x-gemini-service-tier`
 *   (servedTier in fake-gemini-request.ts; `downgradePriority` for priority capacity running short).
 */


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
  /** The usageMetadata the answer reports (its last event, streamed), instead of the fake's count: a documented example. */
  usageMetadata?: GeminiUsageMetadata;
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

let fakesStarted = 0;
export class FakeGemini extends FakeServer<GeminiRecordedRequest, GeminiFailureMode> {
  protected readonly label = 'fake gemini';
  apiKey = 'AIzaSyFake-gemini-key';
  models = new Set(FakeGemini.defaultModels());
  reply: GeminiReply = FakeGemini.defaultReply();
  /** Explicit caches (`cachedContents/<id>` → its token count) a request may name in `cachedContent`. */
  cachedContents = new Map<string, number>();
  /** The shortest prefix the implicit cache reports (Gemini 2.5 Flash: 1,024 tokens). */
  implicitCacheMinTokens = 1024;
  failureMessage = 'Request contains an invalid argument.';
  /** Priority capacity is short: a request asking `priority` is served at standard, and its header says `standard`. */
  downgradePriority = false;
  sseFraming: SseFraming = 'random';
  /** Prefix hashes served so far (implicit caching) → their token count. */
  readonly implicitCache = new Map<string, number>();
  private readonly sseSeed = mixSeed(SSE_BASE_SEED, 2000 + ++fakesStarted);
  private ids = 0;

  static defaultReply(): GeminiReply {
    return { text: 'Hello from the fake Gemini upstream.' };
  }

  static defaultModels(): string[] {
    return ['gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-2.5-flash-lite', 'gemini-2.0-flash', 'gemini-3-pro-preview'];
  }

  resetState(): void {
    super.resetState();
    this.implicitCache.clear();
    this.cachedContents.clear();
    this.implicitCacheMinTokens = 1024;
    this.reply = FakeGemini.defaultReply();
    this.models = new Set(FakeGemini.defaultModels());
    this.apiKey = 'AIzaSyFake-gemini-key';
    this.failureMessage = 'Request contains an invalid argument.';
    this.downgradePriority = false;
    this.sseFraming = 'random';
  }

  /** The prompt's token count as this fake reckons it (promptTokenCount less a named cachedContent's). */
  static countPromptTokens(body: any): number {
    return promptUnits(body).reduce((sum, u) => sum + u.tokens, 0);
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = (await readAll(req)).toString('utf8');
    const { path, query: search } = splitUrl(req.url);
    const query = new URLSearchParams(search);
    const route = /^\/(v1beta|v1)\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(path);
    const record: GeminiRecordedRequest = {
      method: req.method ?? '',
      path,
      query: search,
      headers: req.headers,
      rawBody: raw,
      body: parseJson(raw),
      model: route ? decodeURIComponent(route[2]) : '',
      stream: route?.[3] === 'streamGenerateContent',
      aborted: false,
      finished: false,
    };
    const destroy = this.track(record, req, res);
    const fail = (e: RequestError) => sendJson(res, e.code, { error: { code: e.code, message: e.message, status: e.status, ...(e.details && { details: e.details }) } });

    const mode = this.nextMode(record.model);
    if (mode === 'hang') return;
    if (mode === 'reset') return destroy();
    await this.gate.passed();
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
    res.setHeader('x-gemini-service-tier', servedTier(body, this.downgradePriority));
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
      const finalUsage = reply.usageMetadata ?? usage(output.tokens * n, thoughts * n);
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
    await write(res, answer.slice(0, Math.floor(answer.length / 2)));
    destroy();
  }
}

export async function startFakeGemini(port = 0): Promise<FakeGemini> {
  return new FakeGemini().start(port);
}

// ---- HTTP helpers ----

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendJsonAs(res, status, body, 'application/json; charset=UTF-8');
}
