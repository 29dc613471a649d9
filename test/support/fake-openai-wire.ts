import { IncomingHttpHeaders } from 'node:http';
import { OpenAiError, openAiRequestProblem, requestFields } from './openai-request-check';

/** What the fake OpenAI (fake-upstream.ts) says and records: OpenAI's error bodies, the fake's replies and records. */

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


/**
 * OpenAI's 429 bodies (https://platform.openai.com/docs/guides/error-codes): a rate limit on requests or on tokens
 * (type `requests` / `tokens`, code `rate_limit_exceeded`), or a quota spent (type and code `insufficient_quota`:
 * the organisation's credits or spending limit, not a rate; retrying does not help).
 */
export type RateLimitKind = 'requests' | 'tokens' | 'insufficient_quota';
export const RATE_LIMIT_BODIES: Record<RateLimitKind, { message: string; type: RateLimitKind; param: null; code: string }> = {
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

/**
 * The service tiers OpenAI takes on chat completions, in the order its 400 lists them: `fast` is its 2026 name for
 * priority (ServiceTier in ../shared/openai-openapi.yaml: "include the service_tier=fast or service_tier=priority
 * parameter"). The schema also names `scale`, which the API refuses ("Invalid value: 'scale'. Supported values are:
 * 'auto', 'default', 'fast', 'flex', and 'priority'", its answer as quoted by public clients that measured it).
 */
export const OPENAI_SERVICE_TIERS = ['auto', 'default', 'fast', 'flex', 'priority'] as const;

/**
 * OpenAI's 400 for a service_tier it does not take: its `invalid_value` body, the values listed as OpenAI lists an
 * enum's ("Invalid value: 'other'. Supported values are: 'search', 'open_page', and 'find_in_page'.",
 * github.com/openai/codex/issues/7085). A value that is not a string is left to the schema check.
 */
export function serviceTierRefusal(tier: unknown): OpenAiError | null {
  if (typeof tier !== 'string' || (OPENAI_SERVICE_TIERS as readonly string[]).includes(tier)) return null;
  const listed = OPENAI_SERVICE_TIERS.map((t) => `'${t}'`);
  const message = `Invalid value: '${tier}'. Supported values are: ${listed.slice(0, -1).join(', ')}, and ${listed.at(-1)}.`;
  return { error: { message, type: 'invalid_request_error', param: 'service_tier', code: 'invalid_value' } };
}

/**
 * The tier an OpenAI answer reports (`service_tier` of the chat.completion and of every chunk), "based on the processing
 * mode actually used to serve the request" (ServiceTier in ../shared/openai-openapi.yaml): `priority` when `priority` or
 * `fast` was asked ("The response will show service_tier=priority regardless of if you specify service_tier=fast or
 * priority"), unless priority capacity was short (`downgraded`: then `default`); `flex` for flex; else `default` (a
 * project's `auto` is its default tier).
 */
export function servedServiceTier(asked: unknown, downgraded: boolean, projectTier: ProjectTier = 'default'): ProjectTier {
  if (asked === 'priority' || asked === 'fast') return downgraded ? 'default' : 'priority';
  return asked === 'flex' ? 'flex' : projectTier;
}

/** The tier a project runs `auto` (or no tier) at: `default`, unless its owner set priority as the project's default. */
export type ProjectTier = 'priority' | 'flex' | 'default';

/**
 * What OpenAI refuses of a request's body (openai-request-check.ts): a chat body's service_tier outside the tiers it takes,
 * a chat or speech body checked against its schema in ../shared/openai-openapi.yaml; a transcription's multipart fields
 * (strings all) only for names the schema does not know.
 */
export function openAiBodyProblem(method: string | undefined, record: RecordedRequest): OpenAiError | null {
  if (method !== 'POST') return null;
  const body = record.body !== null && typeof record.body === 'object' && !Array.isArray(record.body) ? record.body : null;
  if (record.path === '/v1/chat/completions' && body) return serviceTierRefusal(body.service_tier) ?? openAiRequestProblem('CreateChatCompletionRequest', body);
  if (record.path === '/v1/audio/speech' && body) return openAiRequestProblem('CreateSpeechRequest', body);
  if (record.path !== '/v1/audio/transcriptions') return null;
  const unknown = Object.keys(record.fields).find((name) => !requestFields('CreateTranscriptionRequest').has(name.replace(/\[\]$/, '')));
  return unknown === undefined ? null : { error: { message: `Unrecognized request argument supplied: ${unknown}`, type: 'invalid_request_error', param: null, code: null } };
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
  /** Responses only: a `reasoning` output item first, with these summary parts when the request asks `reasoning.summary`. */
  reasoning?: { summary: string[] };
  /**
   * Responses only: `custom_tool_call` items (`call_id` is `id`; `namespace` when the tool was offered in a namespace tool,
   * as Codex's `functions.exec`), after any function calls; streamed in `argumentPieces` input deltas.
   */
  customToolCalls?: { id: string; name: string; input: string; namespace?: string }[];
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
  /** POST /v1/responses: what the request asked and what came back (fake-openai-responses.ts). */
  responses?: ResponsesRecord;
}

export interface ResponsesRecord {
  /** `store` as OpenAI applies it: the request's, else true. The fake keeps only the ids of what it stored. */
  store: boolean;
  include: string[];
  previousResponseId: string | null;
  /** The request's reasoning items: `intact` when its encrypted_content is, byte for byte, one the fake issued. */
  reasoningItems: { id: string | null; encrypted: boolean; intact: boolean }[];
  /** Every reasoning item carried encrypted_content that came back intact; null when the input had no reasoning item. */
  reasoningIntact: boolean | null;
  /** The id of the response answered (none for a refusal). */
  responseId: string | null;
}

export interface FakeTranscription {
  text: string;
  language: string;
  duration: number;
  segments: Record<string, unknown>[];
}

export const SPEECH_CONTENT_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};
