import { randomBytes } from 'node:crypto';
import { upstreamUsage } from '../chat/chat-usage';

/** An Anthropic-style object id: `msg_…` for messages, `toolu_…` for a tool call the upstream left without an id. */
export function newId(prefix: 'msg' | 'toolu'): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

export interface MessageStop {
  stop_reason: StopReason;
  stop_sequence: string | null;
}

/** Anthropic's usage block; what the Messages API reports of every request. */
export interface MessageUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

/**
 * Chat's finish_reason as Anthropic's stop_reason (DESIGN.md section 10). `stop_sequence` only when the
 * upstream names the matched string (vLLM's `choices[].stop_reason`); chat's own API does not say which.
 */
export function stopOf(choice: { finish_reason?: unknown; stop_reason?: unknown } | undefined): MessageStop {
  const finishReason = choice?.finish_reason;
  if (finishReason === 'tool_calls' || finishReason === 'function_call') return { stop_reason: 'tool_use', stop_sequence: null };
  if (finishReason === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (finishReason === 'stop' && typeof choice?.stop_reason === 'string' && choice.stop_reason !== '') {
    return { stop_reason: 'stop_sequence', stop_sequence: choice.stop_reason };
  }
  return { stop_reason: 'end_turn', stop_sequence: null };
}

/**
 * Chat's usage block in Anthropic's terms: the cached and cache-write tokens are part of chat's
 * prompt_tokens and stand beside Anthropic's input_tokens; subtotals that add up to more than the prompt are
 * cut to fit (the total wins, as in billing). Null when the upstream sent no valid usage.
 */
export function messageUsage(usage: unknown): MessageUsage | null {
  const tokens = upstreamUsage(usage);
  if (!tokens) return null;
  const details = (usage as { prompt_tokens_details?: unknown }).prompt_tokens_details;
  const detail = (name: string) => {
    const value = details && typeof details === 'object' ? (details as Record<string, unknown>)[name] : undefined;
    return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0;
  };
  const cached = Math.min(detail('cached_tokens'), tokens.promptTokens);
  const cacheWrite = Math.min(detail('cache_write_tokens'), tokens.promptTokens - cached);
  return {
    input_tokens: tokens.promptTokens - cached - cacheWrite,
    output_tokens: tokens.completionTokens,
    cache_read_input_tokens: cached,
    cache_creation_input_tokens: cacheWrite,
  };
}

export function emptyUsage(inputTokens = 0): MessageUsage {
  return { input_tokens: inputTokens, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
}

/** The arguments of a chat tool call as a tool_use block's `input` (an object; arguments that are not one count as none). */
export function toolInput(args: unknown): Record<string, unknown> {
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

interface ChatToolCall {
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

/** A non-streamed chat.completion (its first choice) as the Message it answers. */
export function messageFromCompletion(model: string, completion: Record<string, unknown>): Record<string, unknown> {
  const choice = (Array.isArray(completion.choices) ? completion.choices[0] : undefined) as
    | { message?: Record<string, unknown>; finish_reason?: unknown; stop_reason?: unknown }
    | undefined;
  const message = choice?.message ?? {};
  const content: Record<string, unknown>[] = [];
  const text = [message.content, message.refusal].filter((part): part is string => typeof part === 'string' && part !== '').join('');
  if (text !== '') content.push({ type: 'text', text });
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as ChatToolCall[]) : [];
  for (const call of calls) {
    content.push({
      type: 'tool_use',
      id: typeof call?.id === 'string' && call.id !== '' ? call.id : newId('toolu'),
      name: String(call?.function?.name ?? ''),
      input: toolInput(call?.function?.arguments),
    });
  }
  return {
    id: newId('msg'),
    type: 'message',
    role: 'assistant',
    model,
    content,
    ...stopOf(choice),
    usage: messageUsage(completion.usage) ?? emptyUsage(),
  };
}
