import type { ChatCompletion, ChatMessage } from '../chat-contract';
import { MessageUsage, newId, stopOf } from './anthropic-wire';
import type { Message, TextBlock, ToolUseBlock } from './messages-wire';

/** A usage block of no output: `inputTokens` (the gateway's count of the prompt, or none) and nothing cached. */
export function emptyUsage(inputTokens = 0): MessageUsage {
  return { input_tokens: inputTokens, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
}

/**
 * The arguments of a chat tool call as a tool_use block's `input`, which must be an object; none (absent or
 * empty) is `{}`. Null when the upstream sent arguments that are not a JSON object: the caller answers `{}`
 * and reports it (the route's MalformedToolArguments), as a client cannot tell an empty input from a broken one.
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
 * A non-streamed chat.completion (its first choice) as the Message it answers (the Messages route over a chat
 * upstream), with `usage` as the caller read it from the completion's (billing's reading: DESIGN.md section 10).
 * `malformedToolCalls`: how many tool calls had arguments that were not a JSON object (answered with input `{}`),
 * for the caller to report.
 */
export function messageOfCompletion(model: string, completion: ChatCompletion, usage: MessageUsage): { message: Message; malformedToolCalls: number } {
  const choice = Array.isArray(completion.choices) ? completion.choices[0] : undefined;
  const message: ChatMessage = choice?.message ?? {};
  const content: (TextBlock | ToolUseBlock)[] = [];
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
  const answer: Message = {
    id: newId('msg'),
    type: 'message',
    role: 'assistant',
    model,
    content,
    ...stopOf(choice),
    usage,
  };
  return { message: answer, malformedToolCalls };
}
