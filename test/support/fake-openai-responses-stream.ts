import { randomBytes } from 'node:crypto';
import { sendJson, sendRaw, write } from './fake-server';
import { FailureMode } from './fake-openai-wire';
import { inProgressCopy, MessagePart, PlannedResponse, ResponseObject } from './fake-openai-responses-answer';
import { incompleteToken } from './fake-openai-responses-reasoning';
import { StreamAnswerContext, writeEventStream } from './fake-event-stream';

/**
 * The SSE events of a streamed Response, named and ordered as OpenAI sends them
 * (https://developers.openai.com/api/reference/resources/responses/streaming-events, ResponseStreamEvent in
 * ../shared/openai-openapi.yaml): `response.created`, `response.in_progress`, then per output item
 * `response.output_item.added`, its parts and deltas (a web search's `response.web_search_call.in_progress`, `.searching`
 * and `.completed`), `response.output_item.done`, and last `response.completed` (or
 * `response.incomplete`). Every event has `sequence_number` (0, 1, 2, …) and is framed `event: <type>` + `data: <json>`;
 * there is no `[DONE]`. Deltas carry `obfuscation` padding unless `stream_options.include_obfuscation` is false.
 */

export interface StreamEvent extends Record<string, unknown> {
  type: string;
}

/** How many deltas a call's arguments or input come in. */
export interface StreamShape {
  pieces: number;
  obfuscate: boolean;
}

/** Every event of `planned`, in order, each with its sequence number. */
export function responseEvents(planned: PlannedResponse, shape: StreamShape): StreamEvent[] {
  const events: StreamEvent[] = [];
  const emit = (type: string, fields: Record<string, unknown>) => events.push({ type, ...fields });
  const delta = (type: string, fields: Record<string, unknown>, text: string) => emit(type, { ...fields, delta: text, ...(shape.obfuscate ? { obfuscation: obfuscation(text) } : {}) });
  const final = planned.response;
  emit('response.created', { response: inProgressCopy(planned) });
  emit('response.in_progress', { response: inProgressCopy(planned) });
  final.output.forEach((item, output_index) => {
    const at = { item_id: item.id, output_index };
    if (item.type === 'reasoning') {
      const started = item.encrypted_content === undefined ? { ...item, summary: [] } : { ...item, encrypted_content: incompleteToken(item.encrypted_content), summary: [] };
      emit('response.output_item.added', { output_index, item: started });
      item.summary.forEach((part, summary_index) => {
        emit('response.reasoning_summary_part.added', { ...at, summary_index, part: { type: 'summary_text', text: '' } });
        for (const word of words(part.text)) delta('response.reasoning_summary_text.delta', { ...at, summary_index }, word);
        emit('response.reasoning_summary_text.done', { ...at, summary_index, text: part.text });
        emit('response.reasoning_summary_part.done', { ...at, summary_index, part });
      });
    } else if (item.type === 'message') {
      emit('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
      item.content.forEach((part, content_index) => messagePartEvents(part, { ...at, content_index }, emit, delta));
    } else if (item.type === 'web_search_call') {
      // The search as it runs: added in progress (its action not yet known), then its three steps, then done with the action.
      emit('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', action: { type: 'search' } } });
      for (const step of ['in_progress', 'searching', 'completed']) emit(`response.web_search_call.${step}`, { output_index, item_id: item.id });
    } else if (item.type === 'function_call') {
      emit('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } });
      for (const piece of cut(item.arguments, shape.pieces)) delta('response.function_call_arguments.delta', at, piece);
      emit('response.function_call_arguments.done', { ...at, name: item.name, arguments: item.arguments });
    } else {
      emit('response.output_item.added', { output_index, item: { ...item, input: '' } });
      for (const piece of cut(item.input, shape.pieces)) delta('response.custom_tool_call_input.delta', at, piece);
      emit('response.custom_tool_call_input.done', { ...at, input: item.input });
    }
    emit('response.output_item.done', { output_index, item });
  });
  emit(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final });
  return events.map(({ type, ...fields }, sequence_number) => ({ type, sequence_number, ...fields }));
}

type Emit = (type: string, fields: Record<string, unknown>) => void;
type Delta = (type: string, fields: Record<string, unknown>, text: string) => void;

function messagePartEvents(part: MessagePart, at: Record<string, unknown>, emit: Emit, delta: Delta): void {
  if (part.type === 'refusal') {
    emit('response.content_part.added', { ...at, part: { type: 'refusal', refusal: '' } });
    for (const word of words(part.refusal)) delta('response.refusal.delta', at, word);
    emit('response.refusal.done', { ...at, refusal: part.refusal });
  } else {
    emit('response.content_part.added', { ...at, part: { ...part, text: '' } });
    for (const word of words(part.text)) delta('response.output_text.delta', { ...at, logprobs: [] }, word);
    emit('response.output_text.done', { ...at, text: part.text, logprobs: [] });
  }
  emit('response.content_part.done', { ...at, part });
}

/** The text as its word deltas (a word and the space before it), which concatenate back to the text. */
function words(text: string): string[] {
  return text.match(/\s*\S+\s*$|\s*\S+/g) ?? (text ? [text] : []);
}

function cut(text: string, pieces: number): string[] {
  if (!text) return [];
  const size = Math.ceil(text.length / Math.max(1, pieces));
  const out: string[] = [];
  for (let start = 0; start < text.length; start += size) out.push(text.slice(start, start + size));
  return out;
}

/** Random characters padding a delta's event toward a steady size (stream_options.include_obfuscation). */
function obfuscation(text: string): string {
  return randomBytes(16).toString('base64url').slice(0, Math.max(1, 16 - (Buffer.byteLength(text) % 16)));
}

/** One event as OpenAI frames it: its type on an `event:` line, then its JSON. */
export function frameEvent(event: StreamEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** What the fake OpenAI hands the Responses answer: the socket, the scripted failure, and its own ways to break off. */
export type ResponsesAnswerContext = StreamAnswerContext;

const CUT_MID_ANSWER = new Set<FailureMode | null>(['midStreamFailure', 'truncatedChunked', 'resetMidStream']);

/** A JSON answer, or the broken one the failure mode asks for (the modes act as on chat completions). */
export async function writeJsonAnswer(response: ResponseObject, ctx: ResponsesAnswerContext): Promise<void> {
  const { res, mode } = ctx;
  if (mode === 'malformedJson' || mode === 'invalidJsonData' || mode === 'notSse') return sendRaw(res, 200, 'application/json', '{"id": "resp_broken", "output": [');
  if (mode === 'endlessLine' || CUT_MID_ANSWER.has(mode)) {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (mode === 'endlessLine') {
      await write(res, '{"id": "resp_endless", "filler": "');
      return ctx.writeEndless();
    }
    await write(res, JSON.stringify(response).slice(0, 40));
    return ctx.breakConnection();
  }
  sendJson(res, 200, response);
}

/** The events with the framing and the failure mode (fake-event-stream.ts), as the Responses API frames them. */
export function writeResponseEvents(events: StreamEvent[], ctx: ResponsesAnswerContext): Promise<void> {
  return writeEventStream(events.map(frameEvent), ctx, {
    contentType: 'text/event-stream; charset=utf-8',
    endless: 'event: response.output_text.delta\ndata: {"filler": "',
    invalidJson: 'event: response.output_text.delta\ndata: {"type": this is not JSON\n\n',
    malformed: `event: ${events[1]?.type}\ndata: {"type": broken\n\n`,
  });
}
