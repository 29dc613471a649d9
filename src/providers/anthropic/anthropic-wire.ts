import { randomBytes } from 'node:crypto';
import type { AnswerPriceFacts, ChatChoice, ChatChunkChoice, ChatUsage } from '../chat-contract';

/**
 * Anthropic's Messages API on the wire (https://docs.anthropic.com/en/api/messages and /messages-streaming), in
 * one place for both sides that speak it: the Messages route (the gateway as Anthropic, src/messages/) and the
 * `anthropic` provider (the gateway as Anthropic's client); the request's types, and the answer and events the
 * route writes, are in messages-wire.ts. Fields are optional where Anthropic leaves them out and unknown fields
 * are kept: readers of upstream data still check what they read.
 */

/** The API version the gateway speaks when the client named none (`anthropic-version`). */
export const ANTHROPIC_VERSION = '2023-06-01';

/** An Anthropic-style object id: `msg_…` for messages, `toolu_…` for a tool call that has none. */
export function newId(prefix: 'msg' | 'toolu'): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** Why a message stopped: Anthropic's stop_reason values. */
export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal' | 'model_context_window_exceeded';

export interface MessageStop {
  stop_reason: StopReason;
  stop_sequence: string | null;
}

/** Anthropic's usage block; what the Messages API reports of every request. */
export interface MessageUsage {
  /** The input tokens that were neither read from nor written to the cache. */
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  /** The cache writes by TTL (their sum is cache_creation_input_tokens), when the upstream tells them apart. */
  cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  /** `standard`, `priority` or `batch` (https://docs.claude.com/en/api/service-tiers). */
  service_tier?: string;
  /** `fast` or `standard`, when the request set `speed` (https://platform.claude.com/docs/en/build-with-claude/fast-mode). */
  speed?: string;
  /** Where inference ran: `us`, `global`, or `not_available` (https://platform.claude.com/docs/en/build-with-claude/data-residency). */
  inference_geo?: string;
  /** Uses of the server tools Anthropic ran: `{web_search_requests, web_fetch_requests}` (cumulative in message_delta). */
  server_tool_use?: Record<string, unknown>;
  [extra: string]: unknown;
}

/** One block of a message's content: text, thinking, redacted_thinking, tool_use (and the client's image, tool_result, document). */
export interface ContentBlock {
  type: string;
  text?: string;
  thinking?: string;
  signature?: string;
  id?: string;
  name?: string;
  input?: unknown;
  [extra: string]: unknown;
}

/** A Message: the answer to a request that did not stream, and the `message` of a stream's message_start. */
export interface AnthropicMessage {
  id?: string;
  type?: 'message';
  role?: 'assistant';
  model?: string;
  content?: ContentBlock[];
  stop_reason?: StopReason | null;
  stop_sequence?: string | null;
  usage?: Partial<MessageUsage>;
  [extra: string]: unknown;
}

/** The beta that fast mode (`speed: "fast"`) needs (platform.claude.com/docs/en/build-with-claude/fast-mode). */
export const FAST_MODE_BETA = 'fast-mode-2026-02-01';

/** The provider's translation of a chat request, as chat-to-anthropic.ts builds it (messages-wire.ts types a client's body). */
export type AnthropicRequest = Record<string, unknown> & { model: string; max_tokens: number; messages: unknown[] };

/**
 * Anthropic's usage in chat's token classes (DESIGN.md section 11): the prompt is every input token, cache reads
 * and writes included; cache reads are `cached_tokens`, cache writes `cache_write_tokens`, of which the 1-hour ones
 * are `cache_write_1h_tokens` (always present: this upstream tells the TTLs apart, 0 when it wrote none for an hour).
 * A count that is missing or not a whole number reads 0; billing's tokenUsageOf checks the totals again.
 */
export function chatUsageOfMessage(usage: Partial<MessageUsage> | undefined): ChatUsage {
  const input = count(usage?.input_tokens);
  const cacheRead = count(usage?.cache_read_input_tokens);
  const cacheWrite = count(usage?.cache_creation_input_tokens);
  const cacheWrite1h = count(usage?.cache_creation?.ephemeral_1h_input_tokens);
  const output = count(usage?.output_tokens);
  const prompt = input + cacheRead + cacheWrite;
  return {
    prompt_tokens: prompt,
    completion_tokens: output,
    total_tokens: prompt + output,
    prompt_tokens_details: { cached_tokens: cacheRead, cache_write_tokens: cacheWrite, cache_write_1h_tokens: Math.min(cacheWrite1h, cacheWrite) },
  };
}

/**
 * A stream's usage so far: message_start's, with what message_delta adds. message_delta's counts are cumulative
 * (https://docs.anthropic.com/en/api/messages-streaming): its output_tokens is the total, and input counts it
 * carries replace message_start's.
 */
export function mergedUsage(start: Partial<MessageUsage> | undefined, delta: Partial<MessageUsage> | undefined): Partial<MessageUsage> {
  const merged: Partial<MessageUsage> = { ...start };
  if (delta) for (const [name, value] of Object.entries(delta)) if (value !== null && value !== undefined) merged[name] = value;
  return merged;
}

/** What Anthropic's usage says of inference_geo when the request's model or account has no geography to report. */
const GEO_NOT_AVAILABLE = 'not_available';
/** `web_search_requests` → `web_search`: a server tool's count in usage.server_tool_use, by the family of its dated types. */
const SERVER_TOOL_REQUESTS = /^([a-z][a-z0-9_]*)_requests$/;

/**
 * What a usage block says about the answer's price (DESIGN.md section 12.2): its tier, speed and geography, and the
 * uses of each server tool by family (`server_tool_use.web_search_requests` → `web_search`). `inference_geo:
 * "not_available"` (what Anthropic reports when no geography applies) is no geography; a count that is not a whole
 * number is left out. Undefined when the block says none of these.
 */
export function priceFactsOfUsage(usage: Partial<MessageUsage> | undefined): AnswerPriceFacts | undefined {
  if (!usage) return undefined;
  const facts: AnswerPriceFacts = {};
  if (isText(usage.service_tier)) facts.service_tier = usage.service_tier;
  if (isText(usage.speed)) facts.speed = usage.speed;
  if (isText(usage.inference_geo) && usage.inference_geo !== GEO_NOT_AVAILABLE) facts.inference_geo = usage.inference_geo;
  const tools = usage.server_tool_use;
  if (tools && typeof tools === 'object') {
    for (const [field, uses] of Object.entries(tools)) {
      const family = SERVER_TOOL_REQUESTS.exec(field)?.[1];
      if (family && typeof uses === 'number' && Number.isInteger(uses) && uses >= 0) (facts.tool_uses ??= {})[family] = uses;
    }
  }
  return Object.keys(facts).length > 0 ? facts : undefined;
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

/**
 * Chat's finish_reason as Anthropic's stop_reason (DESIGN.md section 10). `stop_sequence` only when the
 * upstream names the matched string (vLLM's `choices[].stop_reason`); chat's own API does not say which.
 */
export function stopOf(choice: ChatChoice | ChatChunkChoice | undefined): MessageStop {
  const finishReason = choice?.finish_reason;
  if (finishReason === 'tool_calls' || finishReason === 'function_call') return { stop_reason: 'tool_use', stop_sequence: null };
  if (finishReason === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (finishReason === 'stop' && typeof choice?.stop_reason === 'string' && choice.stop_reason !== '') {
    return { stop_reason: 'stop_sequence', stop_sequence: choice.stop_reason };
  }
  return { stop_reason: 'end_turn', stop_sequence: null };
}

/** Anthropic's stop_reason as chat's finish_reason (stopOf's way back). */
export function finishReasonOf(stopReason: unknown): string {
  switch (stopReason) {
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'content_filter';
    default:
      return 'stop';
  }
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0;
}
