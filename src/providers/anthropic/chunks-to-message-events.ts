import type { ChatChunk, ChatChunkChoice, ChatToolCallDelta, ChatUsage } from '../chat-contract';
import { MessageUsage, newId, stopOf } from './anthropic-wire';
import { emptyUsage, toolInput } from './completion-to-message';
import type { Message, MessageStreamEvent, TextBlock, ToolUseBlock } from './messages-wire';

/** The content block being written: text, or a tool call's input as JSON text (`args`: what was relayed of it). */
type OpenBlock = { kind: 'text'; index: number } | { kind: 'tool_use'; index: number; chatIndex: number | undefined; callId: string; args: string };

/**
 * Chat completion chunks as Anthropic's Messages stream (what its SDKs and Claude Code consume), for the Messages
 * route over a chat upstream: message_start, then per content block content_block_start, its deltas (text_delta,
 * input_json_delta) and content_block_stop (a ping after the first block's start), then message_delta with the stop
 * reason and the usage, and message_stop. The caller writes each event, named on its `event:` line by its type.
 */
export class MessageEventsOfChunks {
  private started = false;
  private pinged = false;
  private blocks = 0;
  private open: OpenBlock | null = null;
  private end: ChatChunkChoice | undefined = undefined;
  private usage: ChatUsage | undefined = undefined;
  private events: MessageStreamEvent[] = [];
  /** Tool calls whose relayed arguments were not a JSON object, once the stream is over. */
  malformedToolCalls = 0;

  /**
   * `promptTokens`: the gateway's own count of the prompt, for message_start (the upstream's comes at the end).
   * `usageOf`: the chat usage in Anthropic's terms, as the caller reads it (null when the upstream sent none).
   */
  constructor(
    private readonly model: string,
    private readonly promptTokens: number,
    private readonly usageOf: (usage: ChatUsage | undefined) => MessageUsage | null,
  ) {}

  get hasStarted(): boolean {
    return this.started;
  }

  /** The events one chunk makes (message_start first, once). */
  ofChunk(chunk: ChatChunk): MessageStreamEvent[] {
    this.startOnce();
    if (chunk.usage !== undefined && chunk.usage !== null) this.usage = chunk.usage;
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    for (const text of [choice?.delta?.content, choice?.delta?.refusal]) {
      if (typeof text === 'string' && text !== '') this.appendText(text);
    }
    const calls = choice?.delta?.tool_calls;
    if (Array.isArray(calls)) for (const call of calls) this.appendCall(call);
    if (choice?.finish_reason) this.end = choice;
    return this.taken();
  }

  /** The last events: the open block closed, the stop reason and the usage (the gateway's count of the prompt when the upstream sent none). */
  finish(): MessageStreamEvent[] {
    this.startOnce();
    this.closeOpenBlock();
    const usage = this.usageOf(this.usage) ?? emptyUsage(this.promptTokens);
    this.events.push({ type: 'message_delta', delta: stopOf(this.end), usage }, { type: 'message_stop' });
    return this.taken();
  }

  private taken(): MessageStreamEvent[] {
    const events = this.events;
    this.events = [];
    return events;
  }

  private startOnce(): void {
    if (this.started) return;
    this.started = true;
    const message: Message = { id: newId('msg'), type: 'message', role: 'assistant', model: this.model, content: [], stop_reason: null, stop_sequence: null, usage: emptyUsage(this.promptTokens) };
    this.events.push({ type: 'message_start', message });
  }

  private appendText(text: string): void {
    if (this.open?.kind !== 'text') this.openBlock({ kind: 'text', index: this.blocks }, { type: 'text', text: '' });
    this.events.push({ type: 'content_block_delta', index: this.open!.index, delta: { type: 'text_delta', text } });
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
      this.events.push({ type: 'content_block_delta', index: this.open!.index, delta: { type: 'input_json_delta', partial_json: args } });
    }
  }

  private openBlock(block: OpenBlock, contentBlock: TextBlock | ToolUseBlock): void {
    this.closeOpenBlock();
    this.open = block;
    this.blocks += 1;
    this.events.push({ type: 'content_block_start', index: block.index, content_block: contentBlock });
    if (!this.pinged) {
      this.pinged = true;
      this.events.push({ type: 'ping' });
    }
  }

  private closeOpenBlock(): void {
    if (!this.open) return;
    // Relayed as it came (the deltas are out already); counted, so that a broken upstream is seen.
    if (this.open.kind === 'tool_use' && toolInput(this.open.args) === null) this.malformedToolCalls++;
    this.events.push({ type: 'content_block_stop', index: this.open.index });
    this.open = null;
  }
}

/** Chat streams one tool call after the other, each under its own `index` (and id, in its first delta). */
function isNewCall(delta: ChatToolCallDelta, open: { chatIndex: number | undefined; callId: string }): boolean {
  if (delta.index !== undefined && delta.index !== open.chatIndex) return true;
  return typeof delta.id === 'string' && delta.id !== '' && delta.id !== open.callId;
}
