import { ChatStreamSink } from '../chat/chat-stream-sink';
import { SseWriter } from '../chat/sse';
import { ErrorCode, GatewayError } from '../errors';
import {
  functionCallItem,
  messageItem,
  newId,
  OutputItem,
  outputTextPart,
  ResponseBase,
  responseObject,
  ResponseState,
  statusOf,
} from './response-body';

interface OpenText {
  id: string;
  index: number;
  text: string;
}

interface OpenCall {
  id: string;
  index: number;
  /** The tool call's `index` in chat's deltas. */
  chatIndex: unknown;
  callId: string;
  name: string;
  arguments: string;
}

interface ChunkChoice {
  delta?: { content?: unknown; tool_calls?: unknown };
  finish_reason?: unknown;
}

interface ToolCallDelta {
  index?: unknown;
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

/**
 * Chat completion chunks as the Responses API's event stream (what the official SDKs consume):
 * response.created and response.in_progress, then per output item its `added` event, its deltas and its
 * `done` events, and response.completed (or response.incomplete) with the usage. Each event carries its
 * `sequence_number` and its name on an `event:` line.
 */
export class ResponseEventStream implements ChatStreamSink {
  private sequence = 0;
  private readonly output: OutputItem[] = [];
  private text: OpenText | null = null;
  private call: OpenCall | null = null;
  private finishReason: unknown = null;
  private usage: unknown = undefined;

  constructor(
    private readonly sse: SseWriter,
    private readonly base: ResponseBase,
  ) {}

  get hasStarted(): boolean {
    return this.sse.hasStarted;
  }

  async send(chunk: Record<string, unknown>): Promise<void> {
    const writes: Promise<void>[] = [];
    const emit = (type: string, fields: Record<string, unknown>) => writes.push(this.emit(type, fields));
    this.startOnce(emit);
    if (chunk.usage !== undefined && chunk.usage !== null) this.usage = chunk.usage;
    const choice = (Array.isArray(chunk.choices) ? chunk.choices[0] : undefined) as ChunkChoice | undefined;
    const content = choice?.delta?.content;
    if (typeof content === 'string' && content !== '') this.appendText(content, emit);
    const calls = choice?.delta?.tool_calls;
    if (Array.isArray(calls)) for (const call of calls as ToolCallDelta[]) this.appendCall(call, emit);
    if (choice?.finish_reason) this.finishReason = choice.finish_reason;
    await Promise.all(writes);
  }

  finish(): void {
    const emit = (type: string, fields: Record<string, unknown>) => void this.emit(type, fields);
    const { status, incompleteReason } = statusOf(this.finishReason);
    this.startOnce(emit);
    this.closeOpenItem(emit, status === 'completed' ? 'completed' : 'incomplete');
    const response = responseObject(this.base, { status, output: this.output, usage: this.usage, incompleteReason });
    emit(status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
    this.sse.end();
  }

  /** The error as chat sends it in-band (its code and message), then the Response, failed. */
  fail(error: GatewayError): void {
    void this.emit('error', { code: error.code, message: error.message, param: error.param });
    const state: ResponseState = { status: 'failed', output: this.output, error: { code: responseErrorCode(error), message: error.message } };
    void this.emit('response.failed', { response: responseObject(this.base, state) });
    this.sse.end();
  }

  /** The first events, before the first chunk's (or, for an upstream that sent none, before the end). */
  private startOnce(emit: Emit): void {
    if (this.sequence > 0) return;
    const response = responseObject(this.base, { status: 'in_progress', output: [] });
    emit('response.created', { response });
    emit('response.in_progress', { response });
  }

  private emit(type: string, fields: Record<string, unknown>): Promise<void> {
    return this.sse.sendNamed(type, { type, ...fields, sequence_number: this.sequence++ });
  }

  private appendText(delta: string, emit: Emit): void {
    if (!this.text) {
      this.closeOpenItem(emit, 'completed');
      this.text = { id: newId('msg'), index: this.output.length, text: '' };
      const item = messageItem(this.text.id, 'in_progress', []);
      this.output.push(item);
      emit('response.output_item.added', { output_index: this.text.index, item });
      emit('response.content_part.added', { ...this.textPosition(this.text), part: outputTextPart('') });
    }
    this.text.text += delta;
    emit('response.output_text.delta', { ...this.textPosition(this.text), delta, logprobs: [] });
  }

  private appendCall(delta: ToolCallDelta, emit: Emit): void {
    const name = delta.function?.name;
    const call = this.call && !isNewCall(delta, this.call) ? this.call : this.openCall(delta, emit);
    if (typeof name === 'string' && !call.name) call.name = name;
    const args = delta.function?.arguments;
    if (typeof args === 'string' && args !== '') {
      call.arguments += args;
      emit('response.function_call_arguments.delta', { item_id: call.id, output_index: call.index, delta: args });
    }
  }

  private openCall(delta: ToolCallDelta, emit: Emit): OpenCall {
    this.closeOpenItem(emit, 'completed');
    const name = typeof delta.function?.name === 'string' ? delta.function.name : '';
    const call = { id: newId('fc'), index: this.output.length, chatIndex: delta.index, callId: typeof delta.id === 'string' ? delta.id : '', name, arguments: '' };
    this.call = call;
    const item = functionCallItem(call.id, 'in_progress', call);
    this.output.push(item);
    emit('response.output_item.added', { output_index: call.index, item });
    return call;
  }

  /** Ends the item being written: its `done` events, and its final form in the output. */
  private closeOpenItem(emit: Emit, status: 'completed' | 'incomplete'): void {
    if (this.text) {
      const { text } = this.text;
      const part = outputTextPart(text);
      emit('response.output_text.done', { ...this.textPosition(this.text), text, logprobs: [] });
      emit('response.content_part.done', { ...this.textPosition(this.text), part });
      this.finishItem(this.text.index, messageItem(this.text.id, status, [part]), emit);
      this.text = null;
    }
    if (this.call) {
      const { id, index, name } = this.call;
      emit('response.function_call_arguments.done', { item_id: id, output_index: index, name, arguments: this.call.arguments });
      this.finishItem(index, functionCallItem(id, 'completed', this.call), emit);
      this.call = null;
    }
  }

  private finishItem(index: number, item: OutputItem, emit: Emit): void {
    this.output[index] = item;
    emit('response.output_item.done', { output_index: index, item });
  }

  private textPosition(text: OpenText): Record<string, unknown> {
    return { item_id: text.id, output_index: text.index, content_index: 0 };
  }
}

type Emit = (type: string, fields: Record<string, unknown>) => void;

/** Chat streams one tool call after the other, each under its own `index` (and id, in its first delta). */
function isNewCall(delta: ToolCallDelta, open: OpenCall): boolean {
  if (delta.index !== undefined && delta.index !== open.chatIndex) return true;
  return typeof delta.id === 'string' && delta.id !== '' && open.callId !== '' && delta.id !== open.callId;
}

/** The Response's own error codes are a closed list; the gateway's code is in the `error` event before it. */
function responseErrorCode(error: GatewayError): string {
  return error.code === ErrorCode.RateLimitExceeded ? 'rate_limit_exceeded' : 'server_error';
}
