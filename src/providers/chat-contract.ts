/**
 * The chat contract: what every provider produces and every route (chat, Responses, Messages) consumes,
 * in OpenAI's chat-completion shapes (https://platform.openai.com/docs/api-reference/chat/object and
 * /chat/streaming). Fields are optional where upstreams leave them out, and unknown fields are kept: an
 * openai-compatible upstream's body is passed through as it came. The types say what is expected, not what
 * is guaranteed: readers of upstream data still check what they read (typeof, Array.isArray).
 */

// ---- The request: what a route hands a provider (chat-request.ts) ----

export * from './chat-request';
import type { ChatFunctionCall, ChatToolCall } from './chat-request';

// ---- The answer: what a provider hands back ----

/** Tokens of a prompt or completion by class; the details carry the classes with prices of their own (docs/billing.md). */
export interface ChatUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: ChatPromptTokensDetails | null;
  completion_tokens_details?: ChatCompletionTokensDetails | null;
  /** The gateway's charge for the request in USD (issue 35): set by ChatService, never by a provider. */
  cost?: number;
  [extra: string]: unknown;
}

export interface ChatPromptTokensDetails {
  cached_tokens?: number;
  cache_write_tokens?: number;
  audio_tokens?: number;
  [extra: string]: unknown;
}

export interface ChatCompletionTokensDetails {
  reasoning_tokens?: number;
  audio_tokens?: number;
  [extra: string]: unknown;
}

/** The assistant's message in a choice of a chat.completion. */
export interface ChatMessage {
  role?: string;
  content?: string | null;
  refusal?: string | null;
  tool_calls?: ChatToolCall[];
  /** The legacy single function call. */
  function_call?: ChatFunctionCall | null;
  [extra: string]: unknown;
}

export interface ChatChoice {
  index?: number;
  message?: ChatMessage;
  finish_reason?: string | null;
  /** vLLM's matched stop string (or token id), beside chat's finish_reason `stop`. */
  stop_reason?: string | number | null;
  logprobs?: unknown;
  [extra: string]: unknown;
}

/**
 * Pass-through (DESIGN.md section 11): a provider that speaks the client's own dialect natively (Messages in,
 * `anthropic` up) keeps the upstream's answer beside its chat view, under these keys. Symbols: never serialised,
 * kept by object spread, invisible to readers of the chat fields. The chat view stays whole (usage, deltas),
 * so that billing and the gateway's own count read every answer alike.
 */
export const NATIVE_ANSWER: unique symbol = Symbol('native answer');
export const NATIVE_EVENT: unique symbol = Symbol('native event');
/** A stream's usage so far (a native stream reports its input before its output): charged if the stream ends early. */
export const PARTIAL_USAGE: unique symbol = Symbol('partial usage');

/**
 * What an answer reports about its price (DESIGN.md section 12.2), read by a provider from its native answer:
 * Anthropic's `usage.service_tier`, `usage.speed`, `usage.inference_geo` and `usage.server_tool_use.*_requests`
 * (as `tool_uses`, by tool: `web_search`), Gemini's `x-gemini-service-tier` header, Bedrock's `serviceTier`. An
 * OpenAI-shaped answer says its tier in its own `service_tier` field instead. In a stream, any chunk may carry
 * them; a later one wins, field by field.
 */
export const PRICE_FACTS: unique symbol = Symbol('price facts');

export interface AnswerPriceFacts {
  service_tier?: string;
  speed?: string;
  inference_geo?: string;
  /** Uses of each server tool the upstream ran, by tool family (`web_search`, `web_fetch`). */
  tool_uses?: Record<string, number>;
}

/** One event of a native stream as it came: its name, its data as sent, and that data parsed (for the route to relabel `model`). */
export interface NativeEvent {
  event: string;
  raw: string;
  data: Record<string, unknown>;
}

/** A chat.completion: the answer to a request that did not stream. */
export interface ChatCompletion {
  /** The upstream's own answer, when it is in the client's dialect. */
  [NATIVE_ANSWER]?: Record<string, unknown>;
  [PRICE_FACTS]?: AnswerPriceFacts;
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices: ChatChoice[];
  usage?: ChatUsage | null;
  [extra: string]: unknown;
}

/** A piece of a tool call in a stream: the first names it (index, id, name), the next add to its arguments. */
export interface ChatToolCallDelta {
  index?: number;
  id?: string;
  type?: string;
  function?: ChatFunctionCall;
  [extra: string]: unknown;
}

/** What one chunk adds to a choice's message. */
export interface ChatDelta {
  role?: string;
  content?: string | null;
  refusal?: string | null;
  tool_calls?: ChatToolCallDelta[];
  function_call?: ChatFunctionCall | null;
  [extra: string]: unknown;
}

export interface ChatChunkChoice {
  index?: number;
  delta?: ChatDelta;
  finish_reason?: string | null;
  /** vLLM's matched stop string (or token id), as in ChatChoice. */
  stop_reason?: string | number | null;
  logprobs?: unknown;
  [extra: string]: unknown;
}

/** A chat.completion.chunk: one event of a streamed answer; the last may carry only the usage (`choices: []`). */
export interface ChatChunk {
  /** The upstream event this chunk was read from, when it is in the client's dialect. */
  [NATIVE_EVENT]?: NativeEvent;
  /** The usage known so far, not final: a stream cut after it is charged for it and the gateway's count of the rest. */
  [PARTIAL_USAGE]?: ChatUsage;
  [PRICE_FACTS]?: AnswerPriceFacts;
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices?: ChatChunkChoice[];
  usage?: ChatUsage | null;
  [extra: string]: unknown;
}
