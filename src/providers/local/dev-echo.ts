import { decode, encode } from 'gpt-tokenizer';
import { randomBytes } from 'node:crypto';
import { ChatRequestBody } from '../upstream-provider';
import { contentText, countPromptTokens } from '../token-count';

/** What dev-echo answers: the last user message, cut to the output limit, with real token counts. */
export interface EchoReply {
  id: string;
  created: number;
  content: string;
  finishReason: 'stop' | 'length';
  promptTokens: number;
  completionTokens: number;
}

export function echoReply(body: ChatRequestBody): EchoReply {
  const lastUser = [...body.messages].reverse().find((m) => (m as { role?: unknown })?.role === 'user') as { content?: unknown } | undefined;
  const text = lastUser?.content === undefined || lastUser.content === null ? '' : contentText(lastUser.content);
  const tokens = encode(text);
  const limit = outputLimit(body);
  const cut = limit !== null && tokens.length > limit;
  const kept = cut ? tokens.slice(0, limit) : tokens;
  return {
    id: `chatcmpl-${randomBytes(12).toString('hex')}`,
    created: Math.floor(Date.now() / 1000),
    content: cut ? decode(kept) : text,
    finishReason: cut ? 'length' : 'stop',
    promptTokens: countPromptTokens(body.messages),
    completionTokens: kept.length,
  };
}

/** The words of a reply with their trailing whitespace, so that the chunks concatenate to the reply. */
export function echoWords(content: string): string[] {
  return content.match(/\S+\s*|\s+/g) ?? [];
}

function outputLimit(body: ChatRequestBody): number | null {
  const limit = body.max_completion_tokens ?? body.max_tokens;
  return typeof limit === 'number' && Number.isInteger(limit) && limit >= 0 ? limit : null;
}
