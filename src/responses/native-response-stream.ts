import { ChatStreamSink } from '../chat/chat-stream-sink';
import { Backpressure, SseWriter } from '../chat/sse';
import { GatewayError } from '../errors';
import { ChatChunk, NATIVE_EVENT, NativeEvent } from '../providers/chat-contract';

/** The events that carry the whole Response: its `model` names the catalog id the client asked for. */
const CARRY_RESPONSE = new Set(['response.created', 'response.queued', 'response.in_progress', 'response.completed', 'response.incomplete', 'response.failed']);
/** The events whose Response carries the final usage: the gateway's charge joins it (`usage.cost`). */
const FINAL = new Set(['response.completed', 'response.incomplete']);

/**
 * An `openai` upstream's Responses stream relayed to a Responses client (pass-through, DESIGN.md section 12): every
 * event as it came, on its own `event:` line, but for the Response's `model` (the catalog id) in the events that carry
 * the Response, and `usage.cost` (the charge, USD) in the final one. The stream ends with the upstream's own terminal
 * event; a failure after the first event is an `error` event numbered after the last one relayed.
 */
export class NativeResponseStream implements ChatStreamSink {
  private nextSequence = 0;

  constructor(
    private readonly sse: SseWriter,
    private readonly model: string,
  ) {}

  get hasStarted(): boolean {
    return this.sse.hasStarted;
  }

  send(chunk: ChatChunk): Backpressure {
    const native = chunk[NATIVE_EVENT];
    return native ? this.relay(native, chunk.usage?.cost) : undefined;
  }

  finish(): void {
    this.sse.end();
  }

  fail(error: GatewayError): void {
    this.sse.sendNamed('error', { type: 'error', code: error.code, message: error.message, param: error.param ?? null, sequence_number: this.nextSequence });
    this.sse.end();
  }

  private relay({ event, raw, data }: NativeEvent, cost: number | undefined): Backpressure {
    if (typeof data.sequence_number === 'number') this.nextSequence = data.sequence_number + 1;
    const response = data.response;
    if (!CARRY_RESPONSE.has(event) || !response || typeof response !== 'object') return this.sse.sendRaw(event, raw);
    const relabelled: Record<string, unknown> = { ...response, model: this.model };
    const usage = relabelled.usage;
    if (FINAL.has(event) && cost !== undefined && usage && typeof usage === 'object') relabelled.usage = { ...usage, cost };
    return this.sse.sendNamed(event, { ...data, response: relabelled });
  }
}
