import { MAX_TOKEN_COUNT } from '../billing/request-cost';
import { ChatChunk, ChatCompletion, ChatDelta, ChatFunctionCall, ChatMessage, ChatRequestBody, PassThrough } from '../providers/chat-contract';
import { contentText, countPromptTokens, countTextTokens, toolDefinitions } from '../providers/token-count';

/** A usage block of the gateway's own count, for an upstream that reports none (or a stream cut short): two totals. */
export interface CountedUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

/**
 * Counted with the tokenizer: the prompt (messages and tool definitions) and the produced text (content,
 * refusals, tool-call names and arguments), priced at the base prices (requestCost, no subtotals).
 */
export async function countedUsage(body: ChatRequestBody, producedText: string): Promise<CountedUsage> {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const prompt = await countPromptTokens(messages, toolDefinitions(body));
  const completion = await countTextTokens(producedText);
  // Bounded by the body limit, so far below the columns' limit; capped anyway, so that the count is always a valid total.
  return { prompt_tokens: Math.min(prompt, MAX_TOKEN_COUNT), completion_tokens: Math.min(completion, MAX_TOKEN_COUNT) };
}

/** What every choice of a chat.completion body produced: text, refusal, tool-call names and arguments. */
export function completionText(body: ChatCompletion): string {
  const choices = Array.isArray(body.choices) ? body.choices : [];
  let text = '';
  for (const choice of choices) {
    const message = choice?.message;
    if (!message) continue;
    if (message.content) text += contentText(message.content);
    text += producedText(message);
  }
  return text;
}

/** What a chunk's deltas produced: content, refusal, tool-call names and argument pieces, in their order. */
export function deltaText(chunk: ChatChunk): string {
  const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
  let text = '';
  for (const choice of choices) {
    const delta = choice?.delta;
    if (!delta) continue;
    if (typeof delta.content === 'string') text += delta.content;
    text += producedText(delta);
  }
  return text;
}

/**
 * A message's or delta's text besides its content: the refusal, then each tool call's name and arguments
 * (and the legacy function_call's). A stream's deltas add up to its JSON answer's text.
 */
function producedText(message: ChatMessage | ChatDelta): string {
  let text = typeof message.refusal === 'string' ? message.refusal : '';
  if (Array.isArray(message.tool_calls)) for (const call of message.tool_calls) text += callText(call?.function) + callText(call?.custom as ChatFunctionCall | undefined);
  if (message.function_call) text += callText(message.function_call);
  return text;
}

function callText(fn: ChatFunctionCall | null | undefined): string {
  if (!fn || typeof fn !== 'object') return '';
  // A custom tool's call (`custom: {name, input}`) is counted as a function's: its name, then its free-form input.
  const args = typeof fn.arguments === 'string' ? fn.arguments : typeof fn.input === 'string' ? fn.input : '';
  return (typeof fn.name === 'string' ? fn.name : '') + args;
}

/**
 * A bound on the prompt's tokens for the hold: with a byte-level BPE tokenizer no token is shorter than a
 * byte, and the JSON framing of each message outweighs its chat-template tokens.
 */
export function promptTokenBound(body: ChatRequestBody | PassThrough['body'], contextWindow: number | undefined): number {
  let bytes = 3;
  // `system`: a Messages body passed through (Anthropic's dialect) keeps its system prompt apart from the messages;
  // `instructions` and `input`: a Responses body passed through (OpenAI's) has no messages.
  for (const field of ['messages', 'system', 'instructions', 'input', 'tools', 'functions', 'tool_choice', 'response_format']) {
    if (body[field] !== undefined) bytes += Buffer.byteLength(JSON.stringify(body[field]));
  }
  return contextWindow === undefined ? bytes : Math.min(bytes, contextWindow);
}

/** The gateway's charge (`usage.cost`, USD) when the chat usage carries it (ChatService sets it): for the other dialects' usage blocks. */
export function costOf(usage: unknown): { cost?: number } {
  const cost = usage && typeof usage === 'object' ? (usage as { cost?: unknown }).cost : undefined;
  return typeof cost === 'number' ? { cost } : {};
}
