import { ChatStreamSink } from '../chat/chat-stream-sink';
import { Backpressure, SseWriter } from '../chat/sse';
import { anthropicErrorBody, GatewayError } from '../errors';
import { MessageEventsOfChunks } from '../providers/anthropic/chunks-to-message-events';
import type { MessageStreamEvent } from '../providers/anthropic/messages-wire';
import { ChatChunk, NATIVE_EVENT, NativeEvent } from '../providers/chat-contract';
import { messageUsage } from './message-usage';

/**
 * The Messages stream written to the client: chat chunks as Anthropic's events (providers/anthropic's
 * MessageEventsOfChunks makes them), or an `anthropic` upstream's own events relayed. Each event is named on
 * its `event:` line by its type.
 */
export class MessageEventStream implements ChatStreamSink {
  /** The upstream speaks Anthropic's stream itself: its events are relayed, not made from chat chunks. */
  private relaying = false;
  private readonly events: MessageEventsOfChunks;
  /** Writes started by the current `send`, which waits for them (backpressure). */
  private readonly writes: Backpressure[] = [];

  /**
   * `promptTokens`: the gateway's own count of the prompt, for message_start (the upstream's comes at the end).
   * `onMalformedToolArguments`: told at the end how many tool calls had arguments that were not a JSON object.
   */
  constructor(
    private readonly sse: SseWriter,
    private readonly model: string,
    promptTokens: number,
    private readonly onMalformedToolArguments: (calls: number) => void = () => undefined,
  ) {
    this.events = new MessageEventsOfChunks(model, promptTokens, messageUsage);
  }

  get hasStarted(): boolean {
    return this.sse.hasStarted;
  }

  async send(chunk: ChatChunk): Promise<void> {
    const native = chunk[NATIVE_EVENT];
    if (!this.events.hasStarted && native) this.relaying = true;
    if (this.relaying) return native ? this.relay(native, chunk.usage?.cost) : undefined;
    this.write(this.events.ofChunk(chunk));
    await Promise.all(this.writes.splice(0));
  }

  finish(): void {
    // A relayed stream ended with the upstream's own message_stop.
    if (this.relaying) return this.sse.end();
    const last = this.events.finish();
    if (this.events.malformedToolCalls > 0) this.onMalformedToolArguments(this.events.malformedToolCalls);
    this.write(last);
    this.sse.end();
  }

  /** The error in Anthropic's envelope, as an `error` event (the SDKs throw it as an APIError); the stream ends. */
  fail(error: GatewayError): void {
    this.writes.push(this.sse.sendNamed('error', anthropicErrorBody(error)));
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

  /** Writes the events; `send` waits for the writes it started (backpressure), `finish` and `fail` do not. */
  private write(events: MessageStreamEvent[]): void {
    for (const event of events) this.writes.push(this.sse.sendNamed(event.type, event));
  }
}
