import { ChatChunk, ChatChunkChoice, ChatCompletion, ChatDelta, ChatMessage, ChatRequestBody, ChatUsage } from '../chat-contract';
import { EchoReply, EchoToolCall, echoWords } from './dev-echo';

/** Chat's streamed tool-call arguments come in several deltas; dev-echo cuts each call's arguments into this many. */
const ARGUMENT_PIECES = 3;

/** One step of a choice's stream: its delta and, on the last, the finish reason. */
interface StreamStep {
  delta: ChatDelta;
  finishReason: string | null;
}

/** The number of choices a chat body asks for (`n`, checked by the chat route; 1 when absent). */
export function choiceCount(body: ChatRequestBody): number {
  const n = body.n;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? n : 1;
}

/** A chat.completion of `n` identical choices; its usage counts every choice's tokens, as OpenAI bills them. */
export function echoCompletion(reply: EchoReply, model: string, n: number): ChatCompletion {
  return {
    id: reply.id,
    object: 'chat.completion',
    created: reply.created,
    model,
    choices: Array.from({ length: n }, (_, index) => ({ index, message: messageOf(reply), logprobs: null, finish_reason: reply.finishReason })),
    usage: usageOf(reply, n),
  };
}

/**
 * The chunks of a streamed answer with `n` identical choices, interleaved as OpenAI streams them (each
 * step once per choice index), then the usage chunk when asked for; stops when `signal` aborts.
 */
export async function* echoChunks(reply: EchoReply, model: string, n: number, includeUsage: boolean, signal: AbortSignal): AsyncGenerator<ChatChunk> {
  const chunk = (choices: ChatChunkChoice[]): ChatChunk => ({ id: reply.id, object: 'chat.completion.chunk', created: reply.created, model, choices });
  let first = true;
  for (const { delta, finishReason } of streamSteps(reply)) {
    if (signal.aborted) return;
    // Yield to the event loop between steps, as a real upstream's chunks arrive one by one.
    if (!first) await new Promise((resolve) => setImmediate(resolve));
    first = false;
    for (let index = 0; index < n; index++) yield chunk([{ index, delta, logprobs: null, finish_reason: finishReason }]);
  }
  if (includeUsage) yield { ...chunk([]), usage: usageOf(reply, n) };
}

function messageOf(reply: EchoReply): ChatMessage {
  if (reply.toolCalls.length === 0) return { role: 'assistant', content: reply.content, refusal: null };
  return { role: 'assistant', content: null, refusal: null, tool_calls: reply.toolCalls.map((call) => ({ ...call, function: { ...call.function } })) };
}

function* streamSteps(reply: EchoReply): Generator<StreamStep> {
  if (reply.toolCalls.length > 0) yield* toolCallSteps(reply.toolCalls);
  else yield* textSteps(reply.content ?? '');
  yield { delta: {}, finishReason: reply.finishReason };
}

function* textSteps(content: string): Generator<StreamStep> {
  yield { delta: { role: 'assistant', content: '', refusal: null }, finishReason: null };
  for (const word of echoWords(content)) yield { delta: { content: word }, finishReason: null };
}

/** OpenAI's shape: each call opens with its id, type and name (the first also with the role), then its arguments in pieces. */
function* toolCallSteps(calls: EchoToolCall[]): Generator<StreamStep> {
  for (const [index, call] of calls.entries()) {
    const opening = { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] };
    yield { delta: index === 0 ? { role: 'assistant', content: null, refusal: null, ...opening } : opening, finishReason: null };
    for (const piece of argumentPieces(call.function.arguments)) {
      yield { delta: { tool_calls: [{ index, function: { arguments: piece } }] }, finishReason: null };
    }
  }
}

/** The arguments in ARGUMENT_PIECES pieces or fewer, never splitting a surrogate pair. */
export function argumentPieces(text: string): string[] {
  const size = Math.max(1, Math.ceil(text.length / ARGUMENT_PIECES));
  const pieces: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + size, text.length);
    if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end++;
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function usageOf(reply: EchoReply, n: number): ChatUsage {
  const completionTokens = n * reply.completionTokens;
  return { prompt_tokens: reply.promptTokens, completion_tokens: completionTokens, total_tokens: reply.promptTokens + completionTokens };
}
