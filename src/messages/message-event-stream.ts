import { ChatStreamSink } from '../chat/chat-stream-sink';
import { Backpressure, SseWriter } from '../chat/sse';
import { anthropicErrorBody, GatewayError } from '../errors';
import { ChatChunk, ChatChunkChoice, ChatToolCallDelta, ChatUsage, NATIVE_EVENT, NativeEvent } from '../providers/chat-contract';
import { newId, stopOf } from '../providers/anthropic/anthropic-wire';
import { emptyUsage, messageUsage, toolInput } from './message-body';

/** The content block being written: text, or a tool call's input as JSON text (`args`: what was relayed of it). */
type OpenBlock = { kind: 'text'; index: number } | { kind: 'tool_use'; index: number; chatIndex: number | undefined; callId: string; args: string };

/**
 * Chat completion chunks as Anthropic's Messages stream (what its SDKs and Claude Code consume):
 * message_start, then per content block content_block_start, its deltas (text_delta, input_json_delta) and
 * content_block_stop (a ping after the first block's start), then message_delta with the stop reason and the
 * usage, and message_stop. Each event is named on its `event:` line by its type.
 */
export class MessageEventStream implements ChatStreamSink {
  private started = false;
  /** The upstream speaks Anthropic's stream itself: its events are relayed, not made from chat chunks. */
  private relaying = false;
  private pinged = false;
  private blocks = 0;
  private open: OpenBlock | null = null;
  private end: ChatChunkChoice | undefined = undefined;
  private usage: ChatUsage | undefined = undefined;
  /** Writes started by the current `send`, which waits for them (backpressure). */
  private readonly writes: Backpressure[] = [];

  /** Tool calls whose relayed arguments were not a JSON object, once the stream is over. */
  private malformedToolCalls = 0;

  /**
   * `promptTokens`: the gateway's own count of the prompt, for message_start (the upstream's comes at the end).
   * `onMalformedToolArguments`: told at the end how many tool calls had arguments that were not a JSON object.
   */
  constructor(
    private readonly sse: SseWriter,
    private readonly model: string,
    private readonly promptTokens: number,
    private readonly onMalformedToolArguments: (calls: number) => void = () => undefined,
  ) {}

  get hasStarted(): boolean {
    return this.sse.hasStarted;
  }

  async send(chunk: ChatChunk): Promise<void> {
    const native = chunk[NATIVE_EVENT];
    if (!this.started && native) this.relaying = true;
    if (this.relaying) return native ? this.relay(native, chunk.usage?.cost) : undefined;
    this.startOnce();
    if (chunk.usage !== undefined && chunk.usage !== null) this.usage = chunk.usage;
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    for (const text of [choice?.delta?.content, choice?.delta?.refusal]) {
      if (typeof text === 'string' && text !== '') this.appendText(text);
    }
    const calls = choice?.delta?.tool_calls;
    if (Array.isArray(calls)) for (const call of calls) this.appendCall(call);
    if (choice?.finish_reason) this.end = choice;
    await Promise.all(this.writes.splice(0));
  }

  finish(): void {
    // A relayed stream ended with the upstream's own message_stop.
    if (this.relaying) return this.sse.end();
    this.startOnce();
    this.closeOpenBlock();
    if (this.malformedToolCalls > 0) this.onMalformedToolArguments(this.malformedToolCalls);
    const usage = messageUsage(this.usage) ?? emptyUsage(this.promptTokens);
    this.emit('message_delta', { delta: stopOf(this.end), usage });
    this.emit('message_stop', {});
    this.sse.end();
  }

  /** The error in Anthropic's envelope, as an `error` event (the SDKs throw it as an APIError); the stream ends. */
  fail(error: GatewayError): void {
    this.emit('error', { ...anthropicErrorBody(error) });
    this.sse.end();
  }

  /**
   * An event of an `anthropic` upstream's stream, as it came (pass-through, DESIGN.md section 11): only
   * message_start's `model` is changed, to the catalog id the client asked for, and message_delta's usage gains
   * the charge (`cost`).
   */
  private relay({ event, raw, data }: NativeEvent, cost: number | undefined): Backpressure {
    const message = data.message;
    if (event === 'message_start' && message && typeof message === 'object') {
      return this.sse.sendNamed(event, { ...data, message: { ...message, model: this.model } });
    }
    // The gateway's charge joins the final usage (issue 35): message_delta's, where Anthropic reports the output.
    if (event === 'message_delta' && cost !== undefined) return this.sse.sendNamed(event, { ...data, usage: { ...(data.usage as object), cost } });
    return this.sse.sendRaw(event, raw);
  }

  private startOnce(): void {
    if (this.started) return;
    this.started = true;
    const message = {
      id: newId('msg'),
      type: 'message',
      role: 'assistant',
      model: this.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: emptyUsage(this.promptTokens),
    };
    this.emit('message_start', { message });
  }

  /** Writes one event; `send` waits for the writes it started (backpressure), `finish` and `fail` do not. */
  private emit(type: string, fields: Record<string, unknown>): void {
    this.writes.push(this.sse.sendNamed(type, { type, ...fields }));
  }

  private appendText(text: string): void {
    if (this.open?.kind !== 'text') this.openBlock({ kind: 'text', index: this.blocks }, { type: 'text', text: '' });
    this.emit('content_block_delta', { index: this.open!.index, delta: { type: 'text_delta', text } });
  }

  private appendCall(delta: ChatToolCallDelta): void {
    if (this.open?.kind !== 'tool_use' || isNewCall(delta, this.open)) {
      const callId = typeof delta.id === 'string' && delta.id !== '' ? delta.id : newId('toolu');
      const name = typeof delta.function?.name === 'string' ? delta.function.name : '';
      this.openBlock({ kind: 'tool_use', index: this.blocks, chatIndex: delta.index, callId, args: '' }, { type: 'tool_use', id: callId, name, input: {} });
    }
    const args = delta.function?.arguments;
    if (typeof args === 'string' && args !== '') {
      (this.open as { args: string }).args += args;
      this.emit('content_block_delta', { index: this.open!.index, delta: { type: 'input_json_delta', partial_json: args } });
    }
  }

  private openBlock(block: OpenBlock, contentBlock: Record<string, unknown>): void {
    this.closeOpenBlock();
    this.open = block;
    this.blocks += 1;
    this.emit('content_block_start', { index: block.index, content_block: contentBlock });
    if (!this.pinged) {
      this.pinged = true;
      this.emit('ping', {});
    }
  }

  private closeOpenBlock(): void {
    if (!this.open) return;
    // Relayed as it came (the deltas are out already); counted, so that a broken upstream is seen.
    if (this.open.kind === 'tool_use' && toolInput(this.open.args) === null) this.malformedToolCalls++;
    this.emit('content_block_stop', { index: this.open.index });
    this.open = null;
  }
}

/** Chat streams one tool call after the other, each under its own `index` (and id, in its first delta). */
function isNewCall(delta: ChatToolCallDelta, open: { chatIndex: number | undefined; callId: string }): boolean {
  if (delta.index !== undefined && delta.index !== open.chatIndex) return true;
  return typeof delta.id === 'string' && delta.id !== '' && delta.id !== open.callId;
}
