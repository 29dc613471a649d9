import { ChatStreamSink } from '../chat/chat-stream-sink';
import { Backpressure, SseWriter } from '../chat/sse';
import { ErrorCode, GatewayError } from '../errors';
import { ChatChunk, ChatToolCallDelta, ChatUsage } from '../providers/chat-contract';
import type { ResponsesEventBody, ResponsesPartPosition } from '../providers/openai/responses-events';
import type { ResponsesOutputContent, ResponsesOutputItem } from '../providers/openai/responses-wire';
import {
  callItemPrefix,
  customInput,
  messageItem,
  newId,
  outputTextPart,
  ResponseBase,
  responseObject,
  ResponseState,
  statusOf,
  toolCallItem,
  toolShapeOf,
} from './response-body';
import { ToolShape } from './responses-tools';

/** A message item being written: its one content part, answer text or refusal. */
interface OpenText {
  id: string;
  index: number;
  part: TextPart;
  text: string;
}

/** How each kind of content part is streamed: its part, and its delta and done events. */
interface TextPart {
  part(text: string): ResponsesOutputContent;
  delta(at: ResponsesPartPosition, delta: string): ResponsesEventBody<'response.output_text.delta' | 'response.refusal.delta'>;
  done(at: ResponsesPartPosition, text: string): ResponsesEventBody<'response.output_text.done' | 'response.refusal.done'>;
}

const OUTPUT_TEXT: TextPart = {
  part: outputTextPart,
  delta: (at, delta) => ({ type: 'response.output_text.delta', ...at, delta, logprobs: [] }),
  done: (at, text) => ({ type: 'response.output_text.done', ...at, text, logprobs: [] }),
};

const REFUSAL: TextPart = {
  part: (refusal) => ({ type: 'refusal', refusal }),
  delta: (at, delta) => ({ type: 'response.refusal.delta', ...at, delta }),
  done: (at, refusal) => ({ type: 'response.refusal.done', ...at, refusal }),
};

interface OpenCall {
  id: string;
  index: number;
  /** The tool call's `index` in chat's deltas. */
  chatIndex: number | undefined;
  callId: string;
  name: string;
  arguments: string;
  /** The tool it stands for, known once the upstream names the function (its first delta). */
  shape: ToolShape;
}

/**
 * Chat completion chunks as the Responses API's event stream (what the official SDKs consume):
 * response.created and response.in_progress, then per output item its `added` event, its deltas and its
 * `done` events, and response.completed (or response.incomplete) with the usage. Each event carries its
 * `sequence_number` and its name on an `event:` line.
 */
export class ResponseEventStream implements ChatStreamSink {
  private sequence = 0;
  private readonly output: ResponsesOutputItem[] = [];
  private text: OpenText | null = null;
  private call: OpenCall | null = null;
  private finishReason: string | null = null;
  private usage: ChatUsage | undefined = undefined;
  /** Writes started by the current `send`, which waits for them (backpressure). */
  private readonly writes: Backpressure[] = [];

  constructor(
    private readonly sse: SseWriter,
    private readonly base: ResponseBase,
  ) {}

  get hasStarted(): boolean {
    return this.sse.hasStarted;
  }

  async send(chunk: ChatChunk): Promise<void> {
    this.startOnce();
    if (chunk.usage !== undefined && chunk.usage !== null) this.usage = chunk.usage;
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    const content = choice?.delta?.content;
    if (typeof content === 'string' && content !== '') this.appendText(content, OUTPUT_TEXT);
    const refusal = choice?.delta?.refusal;
    if (typeof refusal === 'string' && refusal !== '') this.appendText(refusal, REFUSAL);
    const calls = choice?.delta?.tool_calls;
    if (Array.isArray(calls)) for (const call of calls) this.appendCall(call);
    if (choice?.finish_reason) this.finishReason = choice.finish_reason;
    await Promise.all(this.writes.splice(0));
  }

  finish(): void {
    const { status, incompleteReason } = statusOf(this.finishReason);
    this.startOnce();
    this.closeOpenItem(status);
    const response = responseObject(this.base, { status, output: this.output, usage: this.usage, incompleteReason });
    this.emit({ type: status === 'completed' ? 'response.completed' : 'response.incomplete', response });
    this.sse.end();
  }

  /** The error as chat sends it in-band (its code and message), then the Response, failed. */
  fail(error: GatewayError): void {
    this.emit({ type: 'error', code: error.code, message: error.message, param: error.param });
    const state: ResponseState = { status: 'failed', output: this.output, error: { code: responseErrorCode(error), message: error.message } };
    this.emit({ type: 'response.failed', response: responseObject(this.base, state) });
    this.sse.end();
  }

  /** The first events, before the first chunk's (or, for an upstream that sent none, before the end). */
  private startOnce(): void {
    if (this.sequence > 0) return;
    const response = responseObject(this.base, { status: 'in_progress', output: [] });
    this.emit({ type: 'response.created', response });
    this.emit({ type: 'response.in_progress', response });
  }

  /** Writes one event; `send` waits for the writes it started (backpressure), `finish` and `fail` do not. */
  private emit(event: ResponsesEventBody): void {
    this.writes.push(this.sse.sendNamed(event.type, { ...event, sequence_number: this.sequence++ }));
  }

  private appendText(delta: string, kind: TextPart): void {
    if (this.text?.part !== kind) {
      this.closeOpenItem('completed');
      this.text = { id: newId('msg'), index: this.output.length, part: kind, text: '' };
      const item = messageItem(this.text.id, 'in_progress', []);
      this.output.push(item);
      this.emit({ type: 'response.output_item.added', output_index: this.text.index, item });
      this.emit({ type: 'response.content_part.added', ...this.textPosition(this.text), part: kind.part('') });
    }
    this.text.text += delta;
    this.emit(kind.delta(this.textPosition(this.text), delta));
  }

  private appendCall(delta: ChatToolCallDelta): void {
    const name = delta.function?.name;
    const call = this.call && !isNewCall(delta, this.call) ? this.call : this.openCall(delta);
    if (typeof name === 'string' && !call.name) call.name = name;
    const args = delta.function?.arguments;
    if (typeof args === 'string' && args !== '') {
      call.arguments += args;
      // A custom tool's input is the `input` string inside the arguments: it is sent whole when the call ends.
      if (call.shape.kind === 'function') this.emit({ type: 'response.function_call_arguments.delta', item_id: call.id, output_index: call.index, delta: args });
    }
  }

  private openCall(delta: ChatToolCallDelta): OpenCall {
    this.closeOpenItem('completed');
    const name = typeof delta.function?.name === 'string' ? delta.function.name : '';
    const shape = toolShapeOf(this.base.toolShapes, name);
    const callId = typeof delta.id === 'string' ? delta.id : '';
    const call = { id: newId(callItemPrefix(shape)), index: this.output.length, chatIndex: delta.index, callId, name, arguments: '', shape };
    this.call = call;
    const item = toolCallItem(call.id, 'in_progress', call, shape);
    this.output.push(item);
    this.emit({ type: 'response.output_item.added', output_index: call.index, item });
    return call;
  }

  /** Ends the item being written: its `done` events, and its final form in the output. */
  private closeOpenItem(status: 'completed' | 'incomplete'): void {
    if (this.text) {
      const { text, part: kind } = this.text;
      const part = kind.part(text);
      this.emit(kind.done(this.textPosition(this.text), text));
      this.emit({ type: 'response.content_part.done', ...this.textPosition(this.text), part });
      this.finishItem(this.text.index, messageItem(this.text.id, status, [part]));
      this.text = null;
    }
    if (this.call) {
      const { id, index, shape } = this.call;
      if (shape.kind === 'function') {
        this.emit({ type: 'response.function_call_arguments.done', item_id: id, output_index: index, name: shape.name, arguments: this.call.arguments });
      } else if (shape.kind === 'custom') {
        const input = customInput(this.call.arguments);
        this.emit({ type: 'response.custom_tool_call_input.delta', item_id: id, output_index: index, delta: input });
        this.emit({ type: 'response.custom_tool_call_input.done', item_id: id, output_index: index, input });
      }
      this.finishItem(index, toolCallItem(id, 'completed', this.call, shape));
      this.call = null;
    }
  }

  private finishItem(index: number, item: ResponsesOutputItem): void {
    this.output[index] = item;
    this.emit({ type: 'response.output_item.done', output_index: index, item });
  }

  private textPosition(text: OpenText): ResponsesPartPosition {
    return { item_id: text.id, output_index: text.index, content_index: 0 };
  }
}

/** Chat streams one tool call after the other, each under its own `index` (and id, in its first delta). */
function isNewCall(delta: ChatToolCallDelta, open: OpenCall): boolean {
  if (delta.index !== undefined && delta.index !== open.chatIndex) return true;
  return typeof delta.id === 'string' && delta.id !== '' && open.callId !== '' && delta.id !== open.callId;
}

/** The Response's own error codes are a closed list; the gateway's code is in the `error` event before it. */
function responseErrorCode(error: GatewayError): string {
  return error.code === ErrorCode.RateLimitExceeded ? 'rate_limit_exceeded' : 'server_error';
}
