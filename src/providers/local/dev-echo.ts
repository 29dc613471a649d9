import { randomBytes } from 'node:crypto';
import { ChatRequestBody } from '../upstream-provider';
import { contentText, countPromptTokens, countTextTokens, tokenPrefix, toolDefinitions } from '../token-count';

/** What dev-echo answers: the last user message, cut to the output limit, with real token counts. */
export interface EchoReply {
  id: string;
  created: number;
  content: string;
  finishReason: 'stop' | 'length';
  promptTokens: number;
  completionTokens: number;
}

export async function echoReply(body: ChatRequestBody): Promise<EchoReply> {
  const lastUser = [...body.messages].reverse().find((m) => (m as { role?: unknown })?.role === 'user') as { content?: unknown } | undefined;
  const text = lastUser?.content === undefined || lastUser.content === null ? '' : contentText(lastUser.content);
  const limit = outputLimit(body);
  const reply = limit === null ? { text, tokens: await countTextTokens(text), cut: false } : await tokenPrefix(text, limit);
  return {
    id: `chatcmpl-${randomBytes(12).toString('hex')}`,
    created: Math.floor(Date.now() / 1000),
    content: reply.text,
    finishReason: reply.cut ? 'length' : 'stop',
    promptTokens: await countPromptTokens(body.messages, toolDefinitions(body)),
    completionTokens: reply.tokens,
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
