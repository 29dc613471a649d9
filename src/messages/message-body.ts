import { separatesCacheWrite1h, tokenUsageOf } from '../billing/request-cost';
import { costOf } from '../chat/chat-usage';
import { MessageUsage, newId, stopOf } from '../providers/anthropic/anthropic-wire';
import { ChatCompletion, ChatMessage } from '../providers/chat-contract';

/**
 * Chat's usage block in Anthropic's terms (DESIGN.md section 10): the cached and cache-write tokens are part
 * of chat's prompt_tokens and stand beside Anthropic's input_tokens, read as billing reads them
 * (tokenUsageOf: invalid subtotals count 0, subtotals over the total are cut to fit). `cache_creation` splits the
 * cache writes by TTL when the upstream tells the 1-hour ones apart (separatesCacheWrite1h). Null when the
 * upstream sent no valid usage.
 */
export function messageUsage(usage: unknown): MessageUsage | null {
  const tokens = tokenUsageOf(usage);
  if (!tokens) return null;
  return {
    input_tokens: tokens.promptTokens - tokens.cachedTokens - tokens.cacheWriteTokens,
    output_tokens: tokens.completionTokens,
    cache_read_input_tokens: tokens.cachedTokens,
    cache_creation_input_tokens: tokens.cacheWriteTokens,
    ...(separatesCacheWrite1h(usage) && {
      cache_creation: {
        ephemeral_5m_input_tokens: tokens.cacheWriteTokens - tokens.cacheWrite1hTokens,
        ephemeral_1h_input_tokens: tokens.cacheWrite1hTokens,
      },
    }),
    ...costOf(usage),
  };
}

export function emptyUsage(inputTokens = 0): MessageUsage {
  return { input_tokens: inputTokens, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
}

/**
 * The arguments of a chat tool call as a tool_use block's `input`, which must be an object; none (absent or
 * empty) is `{}`. Null when the upstream sent arguments that are not a JSON object: the caller answers `{}`
 * and reports it (MalformedToolArguments), as a client cannot tell an empty input from a broken one.
 */
export function toolInput(args: unknown): Record<string, unknown> | null {
  if (args === undefined || args === null || (typeof args === 'string' && args.trim() === '')) return {};
  if (typeof args !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(args);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * A non-streamed chat.completion (its first choice) as the Message it answers. `malformedToolCalls`: how
 * many tool calls had arguments that were not a JSON object (answered with input `{}`), for the caller to report.
 */
export function messageFromCompletion(model: string, completion: ChatCompletion): { message: Record<string, unknown>; malformedToolCalls: number } {
  const choice = Array.isArray(completion.choices) ? completion.choices[0] : undefined;
  const message: ChatMessage = choice?.message ?? {};
  const content: Record<string, unknown>[] = [];
  const text = [message.content, message.refusal].filter((part): part is string => typeof part === 'string' && part !== '').join('');
  if (text !== '') content.push({ type: 'text', text });
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  let malformedToolCalls = 0;
  for (const call of calls) {
    const input = toolInput(call?.function?.arguments);
    if (!input) malformedToolCalls++;
    content.push({
      type: 'tool_use',
      id: typeof call?.id === 'string' && call.id !== '' ? call.id : newId('toolu'),
      name: String(call?.function?.name ?? ''),
      input: input ?? {},
    });
  }
  const answer = {
    id: newId('msg'),
    type: 'message',
    role: 'assistant',
    model,
    content,
    ...stopOf(choice),
    usage: messageUsage(completion.usage) ?? emptyUsage(),
  };
  return { message: answer, malformedToolCalls };
}
