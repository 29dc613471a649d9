import { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { servedServiceTier, serviceTierRefusal, SPEECH_CONTENT_TYPES } from './fake-openai-wire';
import { FakeServer, parseBody, readAll, sendJson, sendRaw, write } from './fake-server';
import { openAiRequestProblem } from './openai-request-check';
import { mixSeed, SSE_BASE_SEED, SseFraming, SseWriter } from './sse-framing';

/**
 * A fake Azure OpenAI resource over real HTTP on 127.0.0.1 (its endpoint `fake.url`, as
 * `https://my-resource.openai.azure.com` is given to the AzureOpenAI client and to a provider's `base_url`).
 * Written from Azure OpenAI's REST reference (https://learn.microsoft.com/azure/ai-services/openai/reference),
 * its content-filter concept pages (concepts/content-filter.md, concepts/content-streaming.md) and its
 * documented error bodies; proven with the `openai` package's AzureOpenAI client (test/fake-azure-openai.e2e-spec.ts).
 *
 * - `POST /openai/deployments/{deployment}/chat/completions` (JSON, or SSE when `stream: true`),
 *   `/audio/transcriptions` (multipart) and `/audio/speech` (audio bytes), each `?api-version=` (required:
 *   none is 404 `Resource not found`, one Azure does not know is 400 `API version not supported`).
 * - `api-key` must be `fake.apiKey` (401 with Azure's body); an `Authorization` header is not read.
 * - A deployment outside `fake.deployments` is 404 `DeploymentNotFound`; an operation the deployment's model does
 *   not serve (chat on a whisper deployment) is 400 `OperationNotSupported`.
 * - Answers are OpenAI's with Azure's annotations: `prompt_filter_results` (in a stream, alone in the first
 *   chunk, with `choices: []` and empty id/model/object) and per-choice `content_filter_results`.
 * - Priority processing (https://learn.microsoft.com/azure/foundry/openai/concepts/priority-processing, API version
 *   2025-10-01-preview and later): a chat request's `service_tier` is answered with the tier that served it, in the
 *   completion and in its chunks, as OpenAI's ("When the service_tier parameter is set, the response body will include
 *   the service_tier value based on the processing mode actually used", Azure's ServiceTier reference); none is
 *   reported when none was asked. `priority` is served unless `downgradePriority`; Azure documents no flex tier, so
 *   this fake serves `flex` at `default`. Values OpenAI refuses are refused with OpenAI's body.
 */

export type AzureDeploymentKind = 'chat' | 'transcription' | 'speech';
export interface AzureDeployment {
  /** The OpenAI model the deployment runs (answers name it as `model`). */
  model: string;
  kind: AzureDeploymentKind;
}

export type AzureFailureMode =
  | 'contentFilter' // 400 content_filter: the prompt filtered, innererror naming `filteredCategories`
  | 'filteredAnswer' // the answer cut by the output filter: finish_reason content_filter, the category filtered in content_filter_results
  | 'status429' // 429 with Azure's rate-limit body and `retry-after: retryAfterS`
  | 'status500'
  | 'cutStream' // a stream: N events (default: half), then the socket is destroyed; JSON: part of the body, then destroyed
  | 'reset' // the socket is destroyed before any answer
  | 'hang'; // never answers

/** API versions the fake knows (GA and preview data-plane versions of the reference). */
export const AZURE_API_VERSIONS = ['2024-02-01', '2024-06-01', '2024-10-21', '2024-12-01-preview', '2025-01-01-preview', '2025-03-01-preview', '2025-04-01-preview', '2025-10-01-preview', '2025-12-01'];

export const AZURE_UNAUTHORIZED = {
  error: {
    code: '401',
    message: 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
  },
};
const RESOURCE_NOT_FOUND = { error: { code: '404', message: 'Resource not found' } };
const API_VERSION_NOT_SUPPORTED = { error: { code: 'BadRequest', message: 'API version not supported' } };
const DEPLOYMENT_NOT_FOUND = {
  error: {
    code: 'DeploymentNotFound',
    message: 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.',
  },
};
const SERVER_ERROR = { error: { code: 'InternalServerError', message: 'The server had an error while processing your request. Sorry about that!' } };
const OPERATION_NAMES: Record<AzureDeploymentKind, string> = { chat: 'chatCompletion', transcription: 'audio transcription', speech: 'audio speech' };
const PROMPT_FILTER_MESSAGE =
  "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766";

/** The four harm categories with their severities (`safe` unless filtered), and the prompt's jailbreak detection. */
export type FilterCategory = 'hate' | 'self_harm' | 'sexual' | 'violence';
export type FilterResults = Record<string, { filtered: boolean; severity?: string; detected?: boolean }>;
export function filterResults(filtered: Partial<Record<FilterCategory, string>> = {}, jailbreak = false): FilterResults {
  const results: FilterResults = {};
  for (const category of ['hate', 'self_harm', 'sexual', 'violence'] as const) {
    results[category] = { filtered: filtered[category] !== undefined, severity: filtered[category] ?? 'safe' };
  }
  return { ...results, jailbreak: { filtered: jailbreak, detected: jailbreak } };
}

export interface AzureReply {
  content: string;
  promptTokens: number;
  /** Default: one per word of the content (or 8 for a tool-call answer). */
  completionTokens?: number;
  /** Prompt tokens read from the prompt cache (prompt_tokens_details.cached_tokens, a part of prompt_tokens). */
  cachedTokens?: number;
  reasoningTokens?: number;
  toolCalls?: { id: string; name: string; arguments: string }[];
}

export interface AzureRecordedRequest {
  method: string;
  /** The path without the query string: /openai/deployments/{deployment}/chat/completions. */
  path: string;
  /** The query's parameters (`api-version`). */
  query: URLSearchParams;
  deployment: string | null;
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
  /** Parsed JSON body (chat, speech); undefined for multipart or unparseable bodies. */
  body: any;
  /** Multipart text fields (transcriptions). */
  fields: Record<string, string>;
  file?: { filename: string; type: string; size: number };
  /** The client closed the connection before the answer was complete. */
  aborted: boolean;
  finished: boolean;
}

let fakesStarted = 0;

export class FakeAzureOpenAI extends FakeServer<AzureRecordedRequest, AzureFailureMode> {
  protected readonly label = 'fake azure openai';
  apiKey = 'azure-fake-key-0123456789abcdef';
  deployments: Record<string, AzureDeployment> = FakeAzureOpenAI.defaultDeployments();
  reply: AzureReply = FakeAzureOpenAI.defaultReply();
  transcription = { text: 'Hello from Azure.', language: 'english', duration: 2.5 };
  speechAudio: Buffer = Buffer.from('ID3azure-fake-audio-'.repeat(64));
  /** The categories `contentFilter` and `filteredAnswer` name as filtered, with their severities. */
  filteredCategories: Partial<Record<FilterCategory, string>> = { violence: 'medium' };
  retryAfterS: number | null = 6;
  /** Priority capacity is short (or the prompt too long for it): a `priority` request is served and reported at `default`. */
  downgradePriority = false;
  sseFraming: SseFraming = 'random';
  private readonly sseSeed = mixSeed(SSE_BASE_SEED, 2000 + ++fakesStarted);
  private ids = 0;

  static defaultDeployments(): Record<string, AzureDeployment> {
    return {
      'gpt-4o-prod': { model: 'gpt-4o-2024-08-06', kind: 'chat' },
      'gpt-4o-mini-eu': { model: 'gpt-4o-mini-2024-07-18', kind: 'chat' },
      'whisper-prod': { model: 'whisper', kind: 'transcription' },
      'tts-prod': { model: 'tts-hd', kind: 'speech' },
    };
  }

  static defaultReply(): AzureReply {
    return { content: 'Hello from the fake Azure OpenAI resource.', promptTokens: 14 };
  }

  resetState(): void {
    super.resetState();
    this.deployments = FakeAzureOpenAI.defaultDeployments();
    this.reply = FakeAzureOpenAI.defaultReply();
    this.filteredCategories = { violence: 'medium' };
    this.retryAfterS = 6;
    this.downgradePriority = false;
    this.sseFraming = 'random';
  }

  /** The usage block an answer of `completionTokens` carries, as Azure (OpenAI) reports it. */
  usageOf(completionTokens: number): Record<string, unknown> {
    const { promptTokens, cachedTokens = 0, reasoningTokens = 0 } = this.reply;
    return {
      completion_tokens: completionTokens,
      completion_tokens_details: { accepted_prediction_tokens: 0, audio_tokens: 0, reasoning_tokens: reasoningTokens, rejected_prediction_tokens: 0 },
      prompt_tokens: promptTokens,
      prompt_tokens_details: { audio_tokens: 0, cached_tokens: cachedTokens },
      total_tokens: promptTokens + completionTokens,
    };
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readAll(req);
    const url = new URL(req.url ?? '/', 'http://fake');
    const match = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|audio\/transcriptions|audio\/speech)$/.exec(url.pathname);
    const record: AzureRecordedRequest = {
      method: req.method ?? '',
      path: url.pathname,
      query: url.searchParams,
      deployment: match ? decodeURIComponent(match[1]) : null,
      headers: req.headers,
      rawBody: raw,
      body: undefined,
      fields: {},
      aborted: false,
      finished: false,
    };
    Object.assign(record, await parseBody(String(req.headers['content-type'] ?? ''), raw));
    const destroy = this.track(record, req, res);

    // Azure checks the key first, then the route and version, then the deployment.
    if (req.headers['api-key'] !== this.apiKey) return sendJson(res, 401, AZURE_UNAUTHORIZED);
    const version = url.searchParams.get('api-version');
    if (!match || req.method !== 'POST' || !version) return sendJson(res, 404, RESOURCE_NOT_FOUND);
    if (!AZURE_API_VERSIONS.includes(version)) return sendJson(res, 400, API_VERSION_NOT_SUPPORTED);
    const deployment = this.deployments[record.deployment!];
    if (!deployment) return sendJson(res, 404, DEPLOYMENT_NOT_FOUND);
    const kind: AzureDeploymentKind = match[2] === 'chat/completions' ? 'chat' : match[2] === 'audio/transcriptions' ? 'transcription' : 'speech';
    if (deployment.kind !== kind) {
      return sendJson(res, 400, {
        error: { code: 'OperationNotSupported', message: `The ${OPERATION_NAMES[kind]} operation does not work with the specified model, ${deployment.model}. Please choose different model and try again. You can learn more about which models can be used with each operation here: https://go.microsoft.com/fwlink/?linkid=2197993.` },
      });
    }

    const mode = this.nextMode(record.deployment ?? undefined);
    if (mode === 'hang') return;
    if (mode === 'reset') return destroy();
    await this.gate.passed();
    if (mode === 'status500') return sendJson(res, 500, SERVER_ERROR);
    if (mode === 'status429') {
      if (this.retryAfterS !== null) res.setHeader('retry-after', String(this.retryAfterS));
      return sendJson(res, 429, {
        error: {
          code: '429',
          message: `Requests to the ${kind === 'chat' ? 'ChatCompletions_Create' : kind === 'speech' ? 'Speech_Create' : 'Transcriptions_Create'} Operation under Azure OpenAI API version ${version} have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after ${this.retryAfterS ?? 60} seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.`,
        },
      });
    }
    if (kind === 'chat') return this.answerChat(record, deployment, mode, destroy, res);
    if (kind === 'transcription') return this.answerTranscription(record, res);
    return this.answerSpeech(record, res);
  }

  private async answerChat(record: AzureRecordedRequest, deployment: AzureDeployment, mode: AzureFailureMode | null, destroy: () => void, res: ServerResponse): Promise<void> {
    const body = record.body;
    const problem = chatBodyProblem(body);
    if (problem) return sendJson(res, 400, { error: { message: problem.message, type: 'invalid_request_error', param: problem.param, code: null } });
    // Past Azure's own first checks, the body is OpenAI's request (the same schema, the same refusals).
    const refused = serviceTierRefusal(body.service_tier) ?? openAiRequestProblem('CreateChatCompletionRequest', body);
    if (refused) return sendJson(res, 400, refused);
    if (mode === 'contentFilter') {
      return sendJson(res, 400, {
        error: {
          message: PROMPT_FILTER_MESSAGE,
          type: null,
          param: 'prompt',
          code: 'content_filter',
          status: 400,
          innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: filterResults(this.filteredCategories) },
        },
      });
    }
    const calls = this.reply.toolCalls;
    const allWords = this.reply.content.split(/\s+/).filter(Boolean);
    // The output filter stops the answer part-way: what came before the filtered part is kept.
    const words = mode === 'filteredAnswer' ? allWords.slice(0, Math.ceil(allWords.length / 2)) : allWords;
    const completionTokens = this.reply.completionTokens ?? (calls ? 8 : words.length);
    const finishReason = mode === 'filteredAnswer' ? 'content_filter' : calls ? 'tool_calls' : 'stop';
    const tier = typeof body.service_tier === 'string' ? { service_tier: servedServiceTier(body.service_tier === 'flex' ? 'default' : body.service_tier, this.downgradePriority) } : {};
    const base = { id: `chatcmpl-azure${++this.ids}`, created: Math.floor(Date.now() / 1000), model: deployment.model, system_fingerprint: 'fp_azure_fake', ...tier };
    const promptFilter = [{ prompt_index: 0, content_filter_results: filterResults() }];
    const answerFilter = mode === 'filteredAnswer' ? filterResults(this.filteredCategories) : filterResults();
    const usage = this.usageOf(completionTokens);

    if (body.stream !== true) {
      const message = calls
        ? { role: 'assistant', content: null, refusal: null, tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) }
        : { role: 'assistant', content: mode === 'filteredAnswer' ? null : this.reply.content, refusal: null };
      const answer = {
        ...base,
        object: 'chat.completion',
        choices: [{ content_filter_results: answerFilter, finish_reason: finishReason, index: 0, logprobs: null, message }],
        prompt_filter_results: promptFilter,
        usage,
      };
      if (mode === 'cutStream') {
        res.writeHead(200, { 'content-type': 'application/json' });
        await write(res, JSON.stringify(answer).slice(0, 60));
        return destroy();
      }
      return sendJson(res, 200, answer);
    }

    const includeUsage = body.stream_options?.include_usage === true;
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ ...base, object: 'chat.completion.chunk', choices, ...(includeUsage ? { usage: null } : {}), ...extra });
    const choice = (delta: unknown, finish: string | null, filter: FilterResults | Record<string, never>) => ({ content_filter_results: filter, delta, finish_reason: finish, index: 0, logprobs: null });
    // The first chunk: the prompt's filter results alone, with no choice and empty id, model and object.
    const events: unknown[] = [{ choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: promptFilter }];
    events.push(chunk([choice({ content: '', refusal: null, role: 'assistant' }, null, {})]));
    if (!calls) words.forEach((word, i) => events.push(chunk([choice({ content: i === 0 ? word : ` ${word}` }, null, filterResults())])));
    calls?.forEach((call, i) => {
      events.push(chunk([choice({ tool_calls: [{ index: i, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }, null, {})]));
      const half = Math.ceil(call.arguments.length / 2);
      for (const piece of [call.arguments.slice(0, half), call.arguments.slice(half)]) {
        if (piece) events.push(chunk([choice({ tool_calls: [{ index: i, function: { arguments: piece } }] }, null, {})]));
      }
    });
    events.push(chunk([choice({}, finishReason, mode === 'filteredAnswer' ? answerFilter : {})]));
    if (includeUsage) events.push(chunk([], { usage }));

    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const sse = new SseWriter(res, this.sseFraming, mixSeed(this.sseSeed, this.ids));
    const cutAt = mode === 'cutStream' ? (this.faultAfterEvents ?? Math.floor(events.length / 2)) : Infinity;
    for (let i = 0; i < events.length; i++) {
      if (res.destroyed) return;
      if (i === cutAt) {
        await sse.flush();
        return destroy();
      }
      await sse.event(`data: ${JSON.stringify(events[i])}\n\n`);
    }
    await sse.end('data: [DONE]\n\n');
  }

  private answerTranscription(record: AzureRecordedRequest, res: ServerResponse): void {
    if (!record.file) return sendJson(res, 400, { error: { message: "'file' is a required property", type: 'invalid_request_error', param: null, code: null } });
    const format = record.fields.response_format ?? 'json';
    if (format === 'text') return sendRaw(res, 200, 'text/plain; charset=utf-8', this.transcription.text);
    if (format !== 'json' && format !== 'verbose_json') {
      return sendJson(res, 400, { error: { message: `'${format}' is not one of ['json', 'text', 'srt', 'verbose_json', 'vtt'] - 'response_format'`, type: 'invalid_request_error', param: null, code: null } });
    }
    const { text, language, duration } = this.transcription;
    const segments = [{ id: 0, seek: 0, start: 0, end: duration, text: ` ${text}`, tokens: [50364, 2425], temperature: 0, avg_logprob: -0.2, compression_ratio: 0.8, no_speech_prob: 0.01 }];
    sendJson(res, 200, format === 'verbose_json' ? { task: 'transcribe', language, duration, text, segments } : { text });
  }

  private async answerSpeech(record: AzureRecordedRequest, res: ServerResponse): Promise<void> {
    const body = record.body;
    for (const field of ['input', 'voice'] as const) {
      if (!body || typeof body[field] !== 'string' || body[field] === '') {
        return sendJson(res, 400, { error: { message: `'${field}' is a required property`, type: 'invalid_request_error', param: null, code: null } });
      }
    }
    const format = typeof body.response_format === 'string' ? body.response_format : 'mp3';
    const contentType = SPEECH_CONTENT_TYPES[format];
    if (!contentType) return sendJson(res, 400, { error: { message: `Invalid response_format: ${format}`, type: 'invalid_request_error', param: 'response_format', code: null } });
    res.writeHead(200, { 'content-type': contentType, 'transfer-encoding': 'chunked' });
    const half = Math.ceil(this.speechAudio.length / 2);
    await write(res, this.speechAudio.subarray(0, half));
    res.end(this.speechAudio.subarray(half));
  }
}

/** Azure (as OpenAI) refuses a chat body without messages, or with a message of no role. */
function chatBodyProblem(body: any): { message: string; param: string | null } | null {
  if (!body || typeof body !== 'object') return { message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)", param: null };
  if (!Array.isArray(body.messages)) return { message: "'messages' is a required property", param: null };
  if (body.messages.length === 0) return { message: "[] is too short - 'messages'", param: null };
  const roleless = body.messages.findIndex((m: any) => !m || typeof m.role !== 'string');
  if (roleless >= 0) return { message: `'role' is a required property - 'messages.${roleless}'`, param: null };
  return null;
}

export async function startFakeAzureOpenAI(port = 0): Promise<FakeAzureOpenAI> {
  return new FakeAzureOpenAI().start(port);
}
