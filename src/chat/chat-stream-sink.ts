import { GatewayError } from '../errors';
import { ChatChunk } from '../providers/chat-contract';
import { Backpressure, SseWriter } from './sse';

/**
 * Where ChatService.stream sends a stream's chunks: chat's own SSE (ChatCompletionSse), or a translation
 * of them (the Responses API's events). Each implementation is the only writer of its response.
 */
export interface ChatStreamSink {
  /** The status line is out: a failure from now on is reported in-band. */
  readonly hasStarted: boolean;
  /** One chat.completion.chunk, already relabelled with the catalog model; a promise while the client cannot take more. */
  send(chunk: ChatChunk): Backpressure;
  /** The upstream finished the stream. */
  finish(): void;
  /** The upstream failed after the first chunk: the error goes in-band and ends the response. */
  fail(error: GatewayError): void;
}

/** Chat completion chunks as OpenAI sends them: `data: {chunk}` events, then `data: [DONE]`. */
export class ChatCompletionSse implements ChatStreamSink {
  constructor(private readonly sse: SseWriter) {}

  get hasStarted(): boolean {
    return this.sse.hasStarted;
  }

  send(chunk: ChatChunk): Backpressure {
    return this.sse.send(chunk);
  }

  finish(): void {
    this.sse.end('[DONE]');
  }

  fail(error: GatewayError): void {
    this.sse.end(JSON.stringify(error.toBody()));
  }
}
