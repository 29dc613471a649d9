import { randomBytes } from 'node:crypto';
import type { ChatRequestBody, ChatRequestMessage, ChatUserMessage } from '../chat-contract';
import { contentText, countPromptTokens, countTextTokens, countToolCallTokens, tokenPrefix, toolDefinitions } from '../token-count';
import { PlannedCall, plannedCalls } from './dev-echo-tools';

/** A tool call in chat's shape. */
export interface EchoToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * What dev-echo answers (one choice): tool calls (a `call` script line, or a forced tool), the tool results'
 * text after tool results, else the last user message; text cut to the output limit; real token counts.
 */
export interface EchoReply {
  id: string;
  created: number;
  /** The text answered; null when the answer is tool calls. */
  content: string | null;
  toolCalls: EchoToolCall[];
  finishReason: 'stop' | 'length' | 'tool_calls';
  promptTokens: number;
  /** The tokens of one choice's answer. */
  completionTokens: number;
}

type EchoAnswer = Pick<EchoReply, 'content' | 'toolCalls' | 'finishReason' | 'completionTokens'>;

/**
 * dev-echo's answer to a chat body (DESIGN.md section 11), within the output limit: the body's, else the model's
 * `max_output_tokens` (the most the hold covers), as an upstream stops at its own.
 */
export async function echoReply(body: ChatRequestBody, maxOutputTokens: number): Promise<EchoReply> {
  const results = toolResultsText(body.messages);
  const lastUser = lastUserContent(body.messages);
  const calls = results === null ? await plannedCalls(body, lastUser) : [];
  const limit = outputLimit(body) ?? maxOutputTokens;
  const answer = calls.length > 0 ? await toolCallAnswer(calls, limit) : await textAnswer(results ?? textOf(lastUser), limit);
  return {
    id: `chatcmpl-${randomBytes(12).toString('hex')}`,
    created: Math.floor(Date.now() / 1000),
    ...answer,
    promptTokens: await countPromptTokens(body.messages, toolDefinitions(body)),
  };
}

/** The words of a reply with their trailing whitespace, so that the chunks concatenate to the reply. */
export function echoWords(content: string): string[] {
  return content.match(/\S+\s*|\s+/g) ?? [];
}

/** The text of the trailing `tool` messages (the results of the last tool calls), one per line; null when the conversation does not end with one. */
function toolResultsText(messages: ChatRequestMessage[]): string | null {
  let first = messages.length;
  while (first > 0 && messages[first - 1]?.role === 'tool') first--;
  if (first === messages.length) return null;
  return messages
    .slice(first)
    .map((message) => textOf(message.content))
    .join('\n');
}

function lastUserContent(messages: ChatRequestMessage[]): ChatUserMessage['content'] | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === 'user') return message.content;
  }
  return undefined;
}

function textOf(content: ChatRequestMessage['content']): string {
  return content === undefined || content === null ? '' : contentText(content);
}

/**
 * The tool calls, whole when they fit the output limit (finish `tool_calls`). Past it they stop where an upstream
 * would, finish `length`: the calls that fit, then the next one's arguments cut to the tokens left (no longer JSON).
 */
async function toolCallAnswer(calls: PlannedCall[], limit: number): Promise<EchoAnswer> {
  const tokens = await countToolCallTokens(calls);
  const fits = tokens <= limit;
  const answered = fits ? calls : await callsWithin(calls, limit);
  return {
    content: null,
    toolCalls: answered.map((call) => ({ id: `call_${randomBytes(12).toString('hex')}`, type: 'function', function: { name: call.name, arguments: call.arguments } })),
    finishReason: fits ? 'tool_calls' : 'length',
    completionTokens: fits ? tokens : await countToolCallTokens(answered),
  };
}

async function callsWithin(calls: PlannedCall[], limit: number): Promise<PlannedCall[]> {
  const kept: PlannedCall[] = [];
  let left = limit;
  for (const call of calls) {
    const tokens = await countToolCallTokens([call]);
    if (tokens <= left) {
      kept.push(call);
      left -= tokens;
      continue;
    }
    const nameTokens = await countTextTokens(call.name);
    if (nameTokens < left) kept.push({ ...call, arguments: (await tokenPrefix(call.arguments, left - nameTokens)).text });
    break;
  }
  return kept;
}

async function textAnswer(text: string, limit: number): Promise<EchoAnswer> {
  const reply = await tokenPrefix(text, limit);
  return { content: reply.text, toolCalls: [], finishReason: reply.cut ? 'length' : 'stop', completionTokens: reply.tokens };
}

function outputLimit(body: ChatRequestBody): number | null {
  const limit = body.max_completion_tokens ?? body.max_tokens;
  return typeof limit === 'number' && Number.isInteger(limit) && limit >= 0 ? limit : null;
}
