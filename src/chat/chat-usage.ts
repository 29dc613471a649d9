import { TokenUsage } from '../usage/usage-record';
import { contentText, countPromptTokens, countTextTokens } from '../providers/token-count';

/** The upstream's usage block, when it has valid token counts. */
export function upstreamUsage(usage: unknown): TokenUsage | null {
  if (!usage || typeof usage !== 'object') return null;
  const { prompt_tokens, completion_tokens } = usage as { prompt_tokens?: unknown; completion_tokens?: unknown };
  if (!isCount(prompt_tokens) || !isCount(completion_tokens)) return null;
  return { promptTokens: prompt_tokens, completionTokens: completion_tokens };
}

/** Counted with the tokenizer, for an upstream that reports no usage (or a stream cut short). */
export async function countedUsage(messages: unknown[], completionText: string): Promise<TokenUsage> {
  return { promptTokens: await countPromptTokens(messages), completionTokens: await countTextTokens(completionText) };
}

/** The text of every choice of a chat.completion body. */
export function completionText(body: Record<string, unknown>): string {
  const choices = Array.isArray(body.choices) ? body.choices : [];
  return choices
    .map((c: { message?: { content?: unknown } }) => (c?.message?.content ? contentText(c.message.content) : ''))
    .join('');
}

/** The content (or refusal) text of a chunk's deltas. */
export function deltaText(chunk: Record<string, unknown>): string {
  const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
  let text = '';
  for (const choice of choices as { delta?: { content?: unknown; refusal?: unknown } }[]) {
    if (typeof choice?.delta?.content === 'string') text += choice.delta.content;
    if (typeof choice?.delta?.refusal === 'string') text += choice.delta.refusal;
  }
  return text;
}

/**
 * A bound on the prompt's tokens for the hold: with a byte-level BPE tokenizer no token is shorter than a
 * byte, and the JSON framing of each message outweighs its chat-template tokens.
 */
export function promptTokenBound(body: Record<string, unknown>, contextWindow: number | undefined): number {
  let bytes = Buffer.byteLength(JSON.stringify(body.messages)) + 3;
  for (const field of ['tools', 'functions', 'tool_choice', 'response_format']) {
    if (body[field] !== undefined) bytes += Buffer.byteLength(JSON.stringify(body[field]));
  }
  return contextWindow === undefined ? bytes : Math.min(bytes, contextWindow);
}

/** The usage record's token columns are `integer`: a larger count is not believable, and could not be stored. */
const MAX_TOKEN_COUNT = 2_147_483_647;

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_TOKEN_COUNT;
}
