import { Readable } from 'node:stream';
import { UpstreamFailure } from '../upstream-failure';
import { discardBody, toUpstreamFailure } from './upstream-transport';

/**
 * The most an upstream may send without a newline, and the most one event's `data:` lines may add up to.
 * Real chunks are a few hundred bytes; past this the stream is broken (or hostile), and the gateway's
 * memory stays bounded (docs/chat.md, "Upstream streams that misbehave").
 */
export const MAX_SSE_EVENT_BYTES = 1024 * 1024;

/**
 * Parses an upstream `text/event-stream` body into its JSON `data:` payloads, as they arrive.
 * Lines end with CRLF, LF or a lone CR, as the WHATWG rules say (a CR at the end of a chunk waits for the
 * next one, which may begin with its LF); `:` comments and blank lines outside an event are skipped.
 * Ends at `data: [DONE]`; an in-band `{"error": ...}` event, a payload that is not JSON, a line or
 * event over MAX_SSE_EVENT_BYTES or a stream that ends without `[DONE]` is an UpstreamFailure.
 * https://html.spec.whatwg.org/multipage/server-sent-events.html
 */
export async function* parseSse(name: string, body: Readable): AsyncGenerator<Record<string, unknown>> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let dataBytes = 0;
  let complete = false;
  try {
    // Not destroyed when the loop returns at [DONE]: destroying it would build an AbortError and
    // stop undici from reusing the connection.
    for await (const chunk of body.iterator({ destroyOnReturn: false })) {
      // Only the new text can hold the next line end, except a CR left at the end of the buffer: the
      // chunk may begin with the LF that makes it a CRLF.
      const lineEnd = /\r\n?|\n/g;
      lineEnd.lastIndex = buffer.endsWith('\r') ? buffer.length - 1 : buffer.length;
      buffer += decoder.decode(chunk as Buffer, { stream: true });
      let lineStart = 0;
      let match: RegExpExecArray | null;
      while ((match = lineEnd.exec(buffer))) {
        if (match[0] === '\r' && match.index === buffer.length - 1) break;
        const line = buffer.slice(lineStart, match.index);
        lineStart = lineEnd.lastIndex;
        if (line === '') {
          if (data.length === 0) continue;
          const payload = data.join('\n');
          data = [];
          dataBytes = 0;
          if (payload === '[DONE]') {
            complete = true;
            return;
          }
          yield parsePayload(name, payload);
        } else if (line.startsWith('data:') || line === 'data') {
          const value = line.slice(line.startsWith('data: ') ? 6 : 5);
          dataBytes += value.length;
          if (dataBytes > MAX_SSE_EVENT_BYTES) throw tooLong(name);
          data.push(value);
        }
        // comments (":"), event:, id: and retry: lines carry nothing the gateway uses
      }
      buffer = buffer.slice(lineStart);
      if (buffer.length > MAX_SSE_EVENT_BYTES) throw tooLong(name);
    }
    // The body's last byte, a CR, ended the blank line after [DONE]: no LF can follow it now.
    if (buffer === '\r' && data.length === 1 && data[0] === '[DONE]') {
      complete = true;
      return;
    }
  } catch (err) {
    throw toUpstreamFailure(name, err);
  } finally {
    if (complete) drain(body);
    else discardBody(body);
  }
  throw new UpstreamFailure('bad_response', `Upstream ${name} ended the stream without [DONE].`);
}

function tooLong(name: string): UpstreamFailure {
  return new UpstreamFailure('bad_response', `Upstream ${name} sent a stream line or event longer than ${MAX_SSE_EVENT_BYTES} bytes.`);
}

function parsePayload(name: string, payload: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    throw new UpstreamFailure('bad_response', `Upstream ${name} sent a malformed stream event.`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new UpstreamFailure('bad_response', `Upstream ${name} sent a stream event that is not an object.`);
  }
  const error = (parsed as { error?: { message?: unknown } }).error;
  if (error) {
    const message = typeof error.message === 'string' ? error.message : 'error event';
    throw new UpstreamFailure('server_error', `Upstream ${name} failed mid-stream: ${message}`);
  }
  return parsed as Record<string, unknown>;
}

/** Reads what follows [DONE] (usually only the end of the response), so the connection goes back to the pool. */
function drain(body: Readable): void {
  body.resume();
}
