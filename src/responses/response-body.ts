import { randomBytes } from 'node:crypto';
import { tokenUsageOf } from '../billing/request-cost';
import { ResponseEcho } from './responses-request.pipe';

/** An OpenAI-style object id: `resp_…`, `msg_…`, `fc_…`. */
export function newId(prefix: 'resp' | 'msg' | 'fc'): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

/** What every state of one Response shares: its id, creation time, catalog model and the request's echo. */
export interface ResponseBase {
  id: string;
  createdAt: number;
  model: string;
  echo: ResponseEcho;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';
export type OutputItem = Record<string, unknown>;

export interface ResponseState {
  status: ResponseStatus;
  output: OutputItem[];
  /** The upstream's chat usage block, when it sent one. */
  usage?: unknown;
  incompleteReason?: string | null;
  error?: { code: string; message: string } | null;
}

export function newResponseBase(model: string, echo: ResponseEcho): ResponseBase {
  return { id: newId('resp'), createdAt: Math.floor(Date.now() / 1000), model, echo };
}

/** The Response object (OpenAI's `Response` schema) in the given state. */
export function responseObject(base: ResponseBase, state: ResponseState): Record<string, unknown> {
  const usage = responseUsage(state.usage);
  return {
    id: base.id,
    object: 'response',
    created_at: base.createdAt,
    status: state.status,
    ...(state.status === 'completed' ? { completed_at: Math.floor(Date.now() / 1000) } : {}),
    background: false,
    error: state.error ?? null,
    incomplete_details: state.incompleteReason ? { reason: state.incompleteReason } : null,
    model: base.model,
    output: state.output,
    previous_response_id: null,
    reasoning: null,
    store: false,
    truncation: 'disabled',
    ...base.echo,
    ...(usage ? { usage } : {}),
  };
}

/** Chat's finish_reason as the Response's status and incomplete reason. */
export function statusOf(finishReason: unknown): { status: 'completed' | 'incomplete'; incompleteReason: string | null } {
  if (finishReason === 'length') return { status: 'incomplete', incompleteReason: 'max_output_tokens' };
  if (finishReason === 'content_filter') return { status: 'incomplete', incompleteReason: 'content_filter' };
  return { status: 'completed', incompleteReason: null };
}

export function outputTextPart(text: string): Record<string, unknown> {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

export function messageItem(id: string, status: ResponseStatus, content: Record<string, unknown>[]): OutputItem {
  return { id, type: 'message', status, role: 'assistant', content };
}

export function functionCallItem(id: string, status: ResponseStatus, call: { callId: string; name: string; arguments: string }): OutputItem {
  return { id, type: 'function_call', status, call_id: call.callId, name: call.name, arguments: call.arguments };
}

/** A non-streamed chat.completion (its first choice) as the Response it answers. */
export function responseFromCompletion(base: ResponseBase, completion: Record<string, unknown>): Record<string, unknown> {
  const choice = (Array.isArray(completion.choices) ? completion.choices[0] : undefined) as
    | { message?: Record<string, unknown>; finish_reason?: unknown }
    | undefined;
  const message = choice?.message ?? {};
  const { status, incompleteReason } = statusOf(choice?.finish_reason);
  const content: Record<string, unknown>[] = [];
  if (typeof message.content === 'string' && message.content !== '') content.push(outputTextPart(message.content));
  if (typeof message.refusal === 'string' && message.refusal !== '') content.push({ type: 'refusal', refusal: message.refusal });
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as ChatToolCall[]) : [];
  const output: OutputItem[] = [];
  if (content.length > 0 || calls.length === 0) output.push(messageItem(newId('msg'), status, content.length ? content : [outputTextPart('')]));
  for (const call of calls) {
    output.push(
      functionCallItem(newId('fc'), 'completed', {
        callId: String(call?.id ?? ''),
        name: String(call?.function?.name ?? ''),
        arguments: String(call?.function?.arguments ?? ''),
      }),
    );
  }
  return responseObject(base, { status, output, usage: completion.usage, incompleteReason });
}

interface ChatToolCall {
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

/**
 * Chat's usage block in the Responses API's terms (ResponseUsage): the counts the request is billed on
 * (tokenUsageOf, which reads this shape back to the same classes). The audio classes have no field there.
 */
export function responseUsage(usage: unknown): Record<string, unknown> | null {
  const tokens = tokenUsageOf(usage);
  if (!tokens) return null;
  return {
    input_tokens: tokens.promptTokens,
    input_tokens_details: { cached_tokens: tokens.cachedTokens, cache_write_tokens: tokens.cacheWriteTokens },
    output_tokens: tokens.completionTokens,
    output_tokens_details: { reasoning_tokens: tokens.reasoningTokens },
    total_tokens: tokens.promptTokens + tokens.completionTokens,
  };
}
