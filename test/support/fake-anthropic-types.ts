import { IncomingHttpHeaders } from 'node:http';

/** The fake Anthropic's types (fake-anthropic.ts re-exports them): its scripted failures, replies, usage and record. */

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

export const ERROR_STATUS: Partial<Record<AnthropicFailureMode, { status: number; type: string; message: string }>> = {
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

/**
 * What the web search server tool finds when a request offers it (`{type: "web_search_20250305", name: "web_search",
 * max_uses?}`, https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool): one search per query, in
 * order, each a `server_tool_use` block then a `web_search_tool_result` block, before the reply's text. The searches
 * past the tool's `max_uses` are answered with the `max_uses_exceeded` error and are not counted.
 */
export interface FakeWebSearch {
  queries: string[];
  /** What each search finds (its titles and URLs); `page_age` null unless given. */
  results: { url: string; title: string; page_age?: string }[];
}

/** The usage block the fake answers (https://docs.claude.com/en/api/messages, the `usage` object). */
export interface AnthropicUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  output_tokens: number;
  /** `standard`, or `priority` when the account's Priority Tier served it (https://docs.claude.com/en/api/service-tiers). */
  service_tier: 'standard' | 'priority';
  /** The geography inference ran in: the request's `inference_geo`, else `not_available` as Anthropic reports it. */
  inference_geo: string;
  /** Only when the request set `speed`: the speed it ran at (`fast`, or `standard` when fast mode was not given). */
  speed?: 'fast' | 'standard';
  /** Only when the request offered a server tool: the uses the answer made of each (web fetch is never run here). */
  server_tool_use?: { web_search_requests: number; web_fetch_requests: number };
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
