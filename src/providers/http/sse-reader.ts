import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { UpstreamFailure } from '../upstream-failure';
import { discardBody, toUpstreamFailure } from './http-transport';

/**
 * The most an upstream may send without a newline, and the most one event's `data:` lines may add up to.
 * Real chunks are a few hundred bytes; past this the stream is broken (or hostile), and the gateway's
 * memory stays bounded (docs/chat.md, "Upstream streams that misbehave").
 */
export const MAX_SSE_EVENT_BYTES = 1024 * 1024;

/** An event's data parsed as the JSON object every provider's events are; anything else is the stream broken. */
export function eventObject<T extends object = Record<string, unknown>>(name: string, data: string): T {
  try {
    const parsed: unknown = JSON.parse(data);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as T;
  } catch {
    // fall through
  }
  throw new UpstreamFailure('bad_response', `Upstream ${name} sent a malformed stream event.`);
}

/** One server-sent event: its name (an `event:` line; undefined without one) and its `data:` lines joined by LF. */
export interface SseEvent {
  event: string | undefined;
  data: string;
}

/**
 * The events of an upstream `text/event-stream` body, as they arrive. Lines end with CRLF, LF or a lone CR,
 * as the WHATWG rules say (a CR ending a read ends its line at once, so no event waits for the next read; an LF
 * opening the next read is the rest of that CRLF);
 * `:` comments, `id:` and `retry:` lines and blank lines outside an event are skipped. A line or event over
 * MAX_SSE_EVENT_BYTES, or a broken connection, is an UpstreamFailure.
 *
 * The end of the stream is the provider's to know (OpenAI's `data: [DONE]`, Anthropic's `message_stop`): it
 * calls `complete()` once it has read the last event it needs, and stops reading; what follows is drained so
 * that the connection goes back to the pool. A body that ends is simply the end of the events: the provider
 * decides whether the stream was whole. Stopped before either, the body is discarded (its connection closed).
 * https://html.spec.whatwg.org/multipage/server-sent-events.html
 */
export class SseReader implements AsyncIterable<SseEvent> {
  private completed = false;

  constructor(
    private readonly name: string,
    private readonly body: Readable,
  ) {}

  /** The provider read the stream's last event: what the body still holds is read and dropped, not cut. */
  complete(): void {
    this.completed = true;
  }

  [Symbol.asyncIterator](): AsyncGenerator<SseEvent> {
    return this.events();
  }

  private async *events(): AsyncGenerator<SseEvent> {
    const { name, body } = this;
    // Node's StringDecoder keeps a character split between reads, as TextDecoder does, at a quarter of its cost
    // per stream (TextDecoder sets up an ICU converter each time); the BOM TextDecoder would drop is dropped below.
    const decoder = new StringDecoder('utf8');
    let atStart = true;
    let buffer = '';
    let event: string | undefined;
    let data: string[] = [];
    let dataBytes = 0;
    let ended = false;
    /** The last read ended with a CR: an LF opening the next read belongs to it. */
    let afterCr = false;
    try {
      // Not destroyed when the loop returns at the provider's end: destroying it would build an AbortError
      // and stop undici from reusing the connection.
      for await (const chunk of body.iterator({ destroyOnReturn: false })) {
        // A CR ends its line at once, even as the last byte of a read (an event is not held back waiting for the
        // next read); an LF that then opens the next read is the rest of that CRLF, and is dropped.
        let text = decoder.write(chunk as Buffer);
        if (atStart && text !== '') {
          // A byte-order mark opening the stream is not part of its first line.
          if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
          atStart = false;
        }
        if (afterCr && text !== '') {
          if (text.startsWith('\n')) text = text.slice(1);
          afterCr = false;
        }
        // Only the new text can hold the next line end: the buffer holds no line end before it.
        const lineEnd = /\r\n?|\n/g;
        lineEnd.lastIndex = buffer.length;
        buffer += text;
        let lineStart = 0;
        let match: RegExpExecArray | null;
        while ((match = lineEnd.exec(buffer))) {
          if (match[0] === '\r' && match.index === buffer.length - 1) afterCr = true;
          const line = buffer.slice(lineStart, match.index);
          lineStart = lineEnd.lastIndex;
          if (line === '') {
            if (data.length > 0) yield { event, data: data.join('\n') };
            event = undefined;
            data = [];
            dataBytes = 0;
          } else if (line.startsWith('data:') || line === 'data') {
            const value = fieldValue(line, 4);
            dataBytes += value.length;
            if (dataBytes > MAX_SSE_EVENT_BYTES) throw tooLong(name);
            data.push(value);
          } else if (line.startsWith('event:') || line === 'event') {
            event = fieldValue(line, 5) || undefined;
          }
          // comments (":"), id: and retry: lines carry nothing the gateway uses
        }
        buffer = buffer.slice(lineStart);
        if (buffer.length > MAX_SSE_EVENT_BYTES) throw tooLong(name);
      }
      ended = true;
    } catch (err) {
      throw toUpstreamFailure(name, err);
    } finally {
      if (this.completed || ended) drain(body);
      else discardBody(body);
    }
  }
}

/** A field's value: what follows its name (`length` characters) and the colon, less one space after the colon. */
function fieldValue(line: string, length: number): string {
  return line.slice(line.startsWith(' ', length + 1) ? length + 2 : length + 1);
}

function tooLong(name: string): UpstreamFailure {
  return new UpstreamFailure('bad_response', `Upstream ${name} sent a stream line or event longer than ${MAX_SSE_EVENT_BYTES} bytes.`);
}

/** Reads what follows the last event (usually only the end of the response), so the connection goes back to the pool. */
function drain(body: Readable): void {
  body.resume();
}
