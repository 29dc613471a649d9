import type {
  ResponsesInputItem,
  ResponsesOutputContent,
  ResponsesOutputItem,
  ResponsesReasoningConfig,
  ResponsesSummaryText,
  ResponsesTextConfig,
  ResponsesTool,
  ResponsesToolChoice,
} from './responses-wire';

/**
 * OpenAI's Responses API answer on the wire: the Response object with its usage, and the events of a streamed one
 * (https://platform.openai.com/docs/api-reference/responses-streaming), for both the Responses route and the
 * `openai` provider. The request side (items, tools) is in responses-wire.ts. Unknown fields are kept (`extra`).
 */

// ---- The answer ----

/**
 * ResponseUsage. `cache_write_tokens` and `cache_write_1h_tokens` are the gateway's own (prompt tokens written to
 * an upstream's cache, priced apart: docs/billing.md), as is `cost` (the charge in USD, DESIGN.md section 11).
 */
export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens?: number; cache_write_1h_tokens?: number; [extra: string]: unknown };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number; [extra: string]: unknown };
  total_tokens: number;
  cost?: number;
  [extra: string]: unknown;
}

export type ResponsesStatus = 'completed' | 'failed' | 'in_progress' | 'cancelled' | 'queued' | 'incomplete';

/** Why a Response failed: a code of OpenAI's closed list (`server_error`, `rate_limit_exceeded`, `invalid_prompt`, …). */
export interface ResponsesError {
  code: string;
  message: string;
  [extra: string]: unknown;
}

/** A Response: the answer to a request that did not stream, and the `response` of a stream's lifecycle events. */
export interface ResponsesResponse {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponsesStatus;
  completed_at?: number | null;
  background?: boolean | null;
  error: ResponsesError | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' | string; [extra: string]: unknown } | null;
  model: string;
  output: ResponsesOutputItem[];
  instructions: string | ResponsesInputItem[] | null;
  max_output_tokens?: number | null;
  metadata?: Record<string, string> | null;
  parallel_tool_calls?: boolean;
  previous_response_id?: string | null;
  reasoning?: ResponsesReasoningConfig | null;
  store?: boolean;
  temperature?: number | null;
  top_p?: number | null;
  text?: ResponsesTextConfig;
  tool_choice?: ResponsesToolChoice;
  tools?: ResponsesTool[];
  truncation?: 'auto' | 'disabled' | null;
  user?: string;
  service_tier?: string | null;
  usage?: ResponsesUsage | null;
  [extra: string]: unknown;
}

// ---- The stream ----

/** Where a content part's events point: the output item, and the part within its content. */
export interface ResponsesPartPosition {
  item_id: string;
  output_index: number;
  content_index: number;
}

/** Where a reasoning summary's events point: the reasoning item, and the summary part within it. */
export interface ResponsesSummaryPosition {
  item_id: string;
  output_index: number;
  summary_index: number;
}

/** Where a tool call's events point. */
export interface ResponsesItemPosition {
  item_id: string;
  output_index: number;
}

/** The fields of each stream event by its `type`, beside `type` and `sequence_number` (ResponseStreamEvent). */
export interface ResponsesEventFields {
  'response.created': { response: ResponsesResponse };
  'response.queued': { response: ResponsesResponse };
  'response.in_progress': { response: ResponsesResponse };
  'response.completed': { response: ResponsesResponse };
  'response.incomplete': { response: ResponsesResponse };
  'response.failed': { response: ResponsesResponse };
  'response.output_item.added': { output_index: number; item: ResponsesOutputItem };
  'response.output_item.done': { output_index: number; item: ResponsesOutputItem };
  'response.content_part.added': ResponsesPartPosition & { part: ResponsesOutputContent };
  'response.content_part.done': ResponsesPartPosition & { part: ResponsesOutputContent };
  'response.output_text.delta': ResponsesPartPosition & { delta: string; logprobs?: unknown[] };
  'response.output_text.done': ResponsesPartPosition & { text: string; logprobs?: unknown[] };
  'response.refusal.delta': ResponsesPartPosition & { delta: string };
  'response.refusal.done': ResponsesPartPosition & { refusal: string };
  'response.function_call_arguments.delta': ResponsesItemPosition & { delta: string };
  'response.function_call_arguments.done': ResponsesItemPosition & { name?: string; arguments: string };
  'response.custom_tool_call_input.delta': ResponsesItemPosition & { delta: string };
  'response.custom_tool_call_input.done': ResponsesItemPosition & { input: string };
  'response.reasoning_summary_part.added': ResponsesSummaryPosition & { part: ResponsesSummaryText };
  'response.reasoning_summary_part.done': ResponsesSummaryPosition & { part: ResponsesSummaryText };
  'response.reasoning_summary_text.delta': ResponsesSummaryPosition & { delta: string };
  'response.reasoning_summary_text.done': ResponsesSummaryPosition & { text: string };
  'response.reasoning_text.delta': ResponsesPartPosition & { delta: string };
  'response.reasoning_text.done': ResponsesPartPosition & { text: string };
  'response.web_search_call.in_progress': ResponsesItemPosition;
  'response.web_search_call.searching': ResponsesItemPosition;
  'response.web_search_call.completed': ResponsesItemPosition;
  error: { code: string | null; message: string; param: string | null };
}

export type ResponsesEventType = keyof ResponsesEventFields;

/** An event as a writer makes it, by its `type` (one type or several); the stream gives it its `sequence_number`. */
export type ResponsesEventBody<T extends ResponsesEventType = ResponsesEventType> = { [K in T]: { type: K } & ResponsesEventFields[K] }[T];

/** One event of a Response stream, as written on its `data:` line (its `event:` line names the same type). */
export type ResponsesStreamEvent<T extends ResponsesEventType = ResponsesEventType> = ResponsesEventBody<T> & { sequence_number: number; [extra: string]: unknown };
