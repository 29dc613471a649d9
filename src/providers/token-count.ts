import { countTokens } from 'gpt-tokenizer';

// OpenAI's chat accounting: every message costs 3 tokens of framing and the reply is primed with 3.
// https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_REPLY = 3;

/** Tokens of a text with the o200k_base encoding (gpt-4o family). */
export function countTextTokens(text: string): number {
  return text.length === 0 ? 0 : countTokens(text);
}

/** Prompt tokens of a chat request's messages, counted the way OpenAI bills them. */
export function countPromptTokens(messages: unknown[]): number {
  let total = TOKENS_PER_REPLY;
  for (const message of messages) {
    total += TOKENS_PER_MESSAGE;
    if (!message || typeof message !== 'object') continue;
    for (const [field, value] of Object.entries(message)) {
      if (value === null || value === undefined) continue;
      total += countTextTokens(field === 'content' ? contentText(value) : typeof value === 'string' ? value : JSON.stringify(value));
    }
  }
  return total;
}

/** The text of a message content: a string, or the text parts of a content array. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content
    .map((part: { type?: unknown; text?: unknown }) => (part?.type === 'text' && typeof part.text === 'string' ? part.text : JSON.stringify(part)))
    .join('');
}
