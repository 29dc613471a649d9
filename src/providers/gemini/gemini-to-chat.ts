import { AnswerPriceFacts, ChatChunk, ChatChunkChoice, ChatCompletion, ChatToolCall, ChatUsage, PARTIAL_USAGE, PRICE_FACTS } from '../chat-contract';
import { eventObject, type SseReader } from '../http/sse-reader';
import { UpstreamFailure } from '../upstream-failure';
import { chatUsageOfGemini, finishReasonOf, GeminiCandidate, GeminiPart, GeminiResponse, newCallId } from './gemini-wire';

type Json = Record<string, unknown>;

/** What a candidate's parts say, in chat's terms. */
interface PartsRead {
  text: string;
  reasoning: string;
  toolCalls: ChatToolCall[];
}

/**
 * A generateContent answer as a chat.completion (DESIGN.md section 11): each candidate a choice, its text parts
 * into `content`, thought parts into `reasoning_content`, functionCall parts into `tool_calls` (ids made by the
 * gateway where Gemini gives none), finishReason into finish_reason, usageMetadata into chat's token classes. A
 * prompt Gemini blocked (promptFeedback.blockReason, no candidate) is an empty answer finished `content_filter`.
 */
export function completionOfResponse(response: GeminiResponse): ChatCompletion {
  const candidates = Array.isArray(response.candidates) ? response.candidates : [];
  const choices = candidates.map((candidate, i) => {
    const read = readParts(candidate);
    return {
      index: typeof candidate?.index === 'number' ? candidate.index : i,
      message: {
        role: 'assistant',
        content: read.text === '' && read.toolCalls.length > 0 ? null : read.text,
        refusal: null,
        ...(read.reasoning !== '' && { reasoning_content: read.reasoning }),
        ...(read.toolCalls.length > 0 && { tool_calls: read.toolCalls }),
      },
      logprobs: null,
      finish_reason: finishReasonOf(candidate?.finishReason, read.toolCalls.length > 0),
    };
  });
  if (choices.length === 0) {
    choices.push({ index: 0, message: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: 'content_filter' });
  }
  return {
    id: chatId(response.responseId),
    object: 'chat.completion',
    created: nowSeconds(),
    model: String(response.modelVersion ?? ''),
    choices,
    usage: chatUsageOfGemini(response.usageMetadata),
  };
}

/**
 * A streamGenerateContent?alt=sse stream as chat chunks. Each `data:` event is a GenerateContentResponse whose
 * candidates carry the next parts (text, thoughts, whole function calls) and, on the last, a finishReason.
 * Gemini sends no end marker: the stream ends with the body, which is a proper end once every candidate seen
 * has finished (or the prompt was blocked); a body that ends before is an UpstreamFailure, and so is an
 * `{error: {code, message, status}}` event. usageMetadata, repeated and growing on the events, is reported once,
 * in a last chunk with `choices: []`; until then the latest is the partial usage (PARTIAL_USAGE). `facts` (the
 * answer's tier, from its headers) ride on every chunk as PRICE_FACTS.
 */
export async function* chunksOfGeminiEvents(name: string, events: SseReader, facts?: AnswerPriceFacts): AsyncGenerator<ChatChunk> {
  let id = chatId(undefined);
  let model = '';
  const created = nowSeconds();
  let usage: ChatUsage | undefined;
  const started = new Set<number>();
  const finished = new Set<number>();
  /** Per candidate: the tool calls named so far (chat's tool-call index). */
  const calls = new Map<number, number>();
  const chunk = (choices: ChatChunkChoice[]): ChatChunk => {
    const c: ChatChunk = { id, object: 'chat.completion.chunk', created, model, choices };
    if (usage) c[PARTIAL_USAGE] = usage;
    if (facts) c[PRICE_FACTS] = facts;
    return c;
  };
  let first = true;
  for await (const { data: text } of events) {
    const event = eventObject<GeminiResponse>(name, text);
    if (event.error && typeof event.error === 'object') throw streamError(name, event.error as Json);
    if (first) {
      id = chatId(event.responseId);
      model = String(event.modelVersion ?? '');
      first = false;
    }
    if (event.usageMetadata && typeof event.usageMetadata === 'object') usage = chatUsageOfGemini(event.usageMetadata);
    const candidates = Array.isArray(event.candidates) ? event.candidates : [];
    if (candidates.length === 0 && event.promptFeedback?.blockReason) {
      finished.add(0);
      yield chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: 'content_filter' }]);
      continue;
    }
    for (const [position, candidate] of candidates.entries()) {
      const index = typeof candidate?.index === 'number' ? candidate.index : position;
      const read = readParts(candidate, calls.get(index) ?? 0);
      const delta: Json = {};
      if (!started.has(index)) {
        started.add(index);
        delta.role = 'assistant';
        delta.content = '';
      }
      if (read.text !== '') delta.content = read.text;
      if (read.reasoning !== '') delta.reasoning_content = read.reasoning;
      if (read.toolCalls.length > 0) {
        delta.tool_calls = read.toolCalls;
        calls.set(index, (calls.get(index) ?? 0) + read.toolCalls.length);
      }
      if (Object.keys(delta).length > 0) yield chunk([{ index, delta, logprobs: null, finish_reason: null }]);
      if (typeof candidate?.finishReason === 'string' && candidate.finishReason !== 'FINISH_REASON_UNSPECIFIED') {
        finished.add(index);
        yield chunk([{ index, delta: {}, logprobs: null, finish_reason: finishReasonOf(candidate.finishReason, calls.has(index)) }]);
      }
    }
  }
  const unfinished = [...started].filter((index) => !finished.has(index));
  if (finished.size === 0 || unfinished.length > 0) {
    throw new UpstreamFailure('bad_response', `Upstream ${name} ended the stream before its answer finished.`);
  }
  if (usage) yield { id, object: 'chat.completion.chunk', created, model, choices: [], usage, ...(facts && { [PRICE_FACTS]: facts }) };
}

/** A candidate's parts: text, thoughts and function calls (in a stream, `firstCall` numbers them as tool-call deltas). */
function readParts(candidate: GeminiCandidate | undefined, firstCall?: number): PartsRead {
  const parts: GeminiPart[] = Array.isArray(candidate?.content?.parts) ? candidate.content.parts : [];
  const read: PartsRead = { text: '', reasoning: '', toolCalls: [] };
  for (const part of parts) {
    if (!part || typeof part !== 'object') continue;
    if (typeof part.text === 'string') {
      if (part.thought === true) read.reasoning += part.text;
      else read.text += part.text;
    } else if (part.functionCall && typeof part.functionCall === 'object') {
      const call = part.functionCall;
      const args = call.args && typeof call.args === 'object' ? call.args : {};
      read.toolCalls.push({
        ...(firstCall !== undefined && { index: firstCall + read.toolCalls.length }),
        id: typeof call.id === 'string' && call.id !== '' ? call.id : newCallId(),
        type: 'function',
        function: { name: String(call.name ?? ''), arguments: JSON.stringify(args) },
      });
    }
  }
  return read;
}

/** An in-stream `{error: {code, message, status}}`: a 4xx passes through as rejected, anything else is the upstream's failure. */
function streamError(name: string, error: Json): UpstreamFailure {
  const message = typeof error.message === 'string' ? error.message : 'error event';
  const code = typeof error.code === 'number' ? error.code : null;
  if (code !== null && code >= 400 && code < 500) return new UpstreamFailure('rejected', message, code);
  return new UpstreamFailure('server_error', `Upstream ${name} failed mid-stream: ${message}`, code);
}


/** A chat id from Gemini's responseId: the same answer, traceable on both sides. */
function chatId(responseId: unknown): string {
  return typeof responseId === 'string' && responseId !== '' ? `chatcmpl-${responseId}` : `chatcmpl-${newCallId().slice(5)}`;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
