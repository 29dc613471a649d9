import { randomBytes } from 'node:crypto';
import { FakeReply } from './fake-openai-wire';
import { sealReasoning } from './fake-openai-responses-reasoning';

/**
 * The fake OpenAI's `response` object for POST /v1/responses, built from the fake's reply (FakeReply) and the request, in
 * the shape and field order of OpenAI's answers (Response in ../shared/openai-openapi.yaml;
 * https://platform.openai.com/docs/api-reference/responses/object): the request's settings echoed, output items
 * (reasoning, then a message or the tool calls), usage with its details, and the tier that served it.
 */

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';
export type MessagePart = { type: 'output_text'; annotations: []; logprobs: []; text: string } | { type: 'refusal'; refusal: string };
export type OutputItem =
  | { id: string; type: 'reasoning'; encrypted_content?: string; summary: { type: 'summary_text'; text: string }[] }
  | { id: string; type: 'message'; status: ItemStatus; content: MessagePart[]; role: 'assistant' }
  | { id: string; type: 'function_call'; status: ItemStatus; arguments: string; call_id: string; name: string }
  | { id: string; type: 'custom_tool_call'; call_id: string; namespace?: string; name: string; input: string }
  | { id: string; type: 'web_search_call'; status: 'completed'; action: WebSearchAction };

/** A search's action as OpenAI reports it (WebSearchActionSearch): the query, and its sources when the request includes them. */
export interface WebSearchAction {
  type: 'search';
  query: string;
  sources?: { type: 'url'; url: string }[];
}

/** A web search the fake runs (FakeResponsesApi.webSearches): its query and the pages it found. */
export interface FakeWebSearch {
  query: string;
  sources?: string[];
}

/** The web search tool under its current and dated names (WebSearchTool, WebSearchPreviewTool in the schema). */
const WEB_SEARCH_TOOLS = new Set(['web_search', 'web_search_preview', 'web_search_2025_08_26', 'web_search_preview_2025_03_11']);

export interface ResponseObject extends Record<string, unknown> {
  id: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  output: OutputItem[];
  service_tier: string;
  usage: Record<string, unknown> | null;
}

/** What a request gets: the final response, and the request's settings for the in-progress copies of a stream. */
export interface PlannedResponse {
  response: ResponseObject;
  /** The tier the request asked (`auto` when none): the in-progress copies carry it, the final one the tier that served. */
  askedTier: string;
}

/** An id as OpenAI spells them: a prefix and 48 hex digits (`resp_68d8…`, `rs_…`, `msg_…`, `fc_…`, `ctc_…`). */
export const newId = (prefix: string): string => `${prefix}_${randomBytes(24).toString('hex')}`;

export interface PlanOptions {
  /** The key that seals reasoning items (fake-openai-responses-reasoning.ts). */
  reasoningKey: Buffer;
  /** Encrypted reasoning without `include: ["reasoning.encrypted_content"]` (FakeResponsesApi.encryptedContentByDefault). */
  encryptedByDefault: boolean;
  servedTier: string;
  /** The searches to run when the request offers the web search tool (none otherwise, as OpenAI's model cannot search then). */
  webSearches: FakeWebSearch[];
}

/**
 * The answer to `body`: a reasoning item when the reply has reasoning (its summary only when the request asks
 * `reasoning.summary`, its encrypted_content when it includes `reasoning.encrypted_content`), a `web_search_call` item per
 * search when the request offers the web search tool, then the function and custom tool calls, or else a message with the
 * text (or refusal). `max_output_tokens` below the reply's tokens cuts the
 * text to that many words and tokens, drops the calls, and makes the response `incomplete` (reason `max_output_tokens`).
 */
export function planResponse(body: Record<string, any>, reply: FakeReply, options: PlanOptions): PlannedResponse {
  const limit = typeof body.max_output_tokens === 'number' && body.max_output_tokens < reply.completionTokens ? body.max_output_tokens : null;
  const output: OutputItem[] = [];
  if (reply.reasoning) output.push(reasoningItem(body, reply.reasoning.summary, options));
  output.push(...webSearchItems(body, options.webSearches));
  const calls = limit === null ? callItems(reply) : [];
  if (calls.length) output.push(...calls);
  else output.push(messageItem(reply, limit));
  const outputTokens = limit ?? reply.completionTokens;
  const response = responseObject(body, {
    id: newId('resp'),
    status: limit === null ? 'completed' : 'incomplete',
    output,
    service_tier: options.servedTier,
    usage: reply.omitUsage ? null : usageBlock(reply, outputTokens),
  });
  return { response, askedTier: typeof body.service_tier === 'string' ? body.service_tier : 'auto' };
}

/** OpenAI's Responses usage: totals, `input_tokens_details` and `output_tokens_details`, the reply's details over zeros. */
export function usageBlock(reply: FakeReply, outputTokens: number): Record<string, unknown> {
  return {
    input_tokens: reply.promptTokens,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0, ...reply.usageDetails?.prompt },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0, ...reply.usageDetails?.completion },
    total_tokens: reply.promptTokens + outputTokens,
  };
}

function reasoningItem(body: Record<string, any>, summary: string[], options: PlanOptions): OutputItem {
  const id = newId('rs');
  const parts = body.reasoning?.summary ? summary : [];
  const include: unknown[] = Array.isArray(body.include) ? body.include : [];
  const encrypted = options.encryptedByDefault || include.includes('reasoning.encrypted_content');
  return {
    id,
    type: 'reasoning',
    ...(encrypted ? { encrypted_content: sealReasoning(options.reasoningKey, { id, summary }) } : {}),
    summary: parts.map((text) => ({ type: 'summary_text' as const, text })),
  };
}

/**
 * The searches run, each a completed `web_search_call` item (`ws_…`, WebSearchToolCall): `action.sources` only when the
 * request includes `web_search_call.action.sources`, as OpenAI documents that include.
 */
function webSearchItems(body: Record<string, any>, searches: FakeWebSearch[]): OutputItem[] {
  const tools: unknown[] = Array.isArray(body.tools) ? body.tools : [];
  if (!tools.some((tool: any) => WEB_SEARCH_TOOLS.has(tool?.type))) return [];
  const withSources = Array.isArray(body.include) && body.include.includes('web_search_call.action.sources');
  return searches.map(({ query, sources = [] }) => ({
    id: newId('ws'),
    type: 'web_search_call',
    status: 'completed',
    action: { type: 'search', query, ...(withSources ? { sources: sources.map((url) => ({ type: 'url' as const, url })) } : {}) },
  }));
}

function callItems(reply: FakeReply): OutputItem[] {
  const functions: OutputItem[] = (reply.toolCalls ?? []).map((call) => ({ id: newId('fc'), type: 'function_call', status: 'completed', arguments: call.arguments, call_id: call.id, name: call.name }));
  const customs: OutputItem[] = (reply.customToolCalls ?? []).map((call) => ({
    id: newId('ctc'),
    type: 'custom_tool_call',
    call_id: call.id,
    ...(call.namespace === undefined ? {} : { namespace: call.namespace }),
    name: call.name,
    input: call.input,
  }));
  return [...functions, ...customs];
}

function messageItem(reply: FakeReply, limit: number | null): OutputItem {
  const words = reply.content.split(/\s+/).filter(Boolean);
  const text = limit === null ? reply.content : words.slice(0, limit).join(' ');
  const part: MessagePart = reply.refusal ? { type: 'refusal', refusal: text } : { type: 'output_text', annotations: [], logprobs: [], text };
  return { id: newId('msg'), type: 'message', status: limit === null ? 'completed' : 'incomplete', content: [part], role: 'assistant' };
}

/** The response object as OpenAI orders it, the request's settings echoed (defaults where it set none). */
function responseObject(body: Record<string, any>, own: Pick<ResponseObject, 'id' | 'status' | 'output' | 'service_tier' | 'usage'>): ResponseObject {
  const now = Math.floor(Date.now() / 1000);
  return {
    id: own.id,
    object: 'response',
    created_at: now,
    status: own.status,
    background: body.background ?? false,
    completed_at: own.status === 'completed' ? now : null,
    error: null,
    incomplete_details: own.status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: body.max_tool_calls ?? null,
    model: body.model,
    output: own.output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    safety_identifier: body.safety_identifier ?? null,
    service_tier: own.service_tier,
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_logprobs: body.top_logprobs ?? 0,
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? 'disabled',
    usage: own.usage,
    user: body.user ?? null,
    metadata: body.metadata ?? {},
  };
}

/** The copy of `response` that `response.created` and `response.in_progress` carry: nothing produced yet. */
export function inProgressCopy(planned: PlannedResponse): ResponseObject {
  return { ...planned.response, status: 'in_progress', completed_at: null, incomplete_details: null, output: [], service_tier: planned.askedTier, usage: null };
}
