import { ChatChunk } from '../chat-contract';
import { SseEvent, SseReader } from '../http/sse-reader';
import { UpstreamFailure } from '../upstream-failure';

/**
 * A streamed chat completion's chunks, from the JSON `data:` payloads of OpenAI's stream. Ends at
 * `data: [DONE]` (nothing after it is read); an in-band `{"error": ...}` event, a payload that is not a JSON
 * object, or a stream that ends without `[DONE]` is an UpstreamFailure.
 */
export function chatChunks(name: string, events: SseReader): AsyncIterableIterator<ChatChunk> {
  return new ChatChunks(name, events);
}

/**
 * Maps the reader's events one for one, without an async generator of its own: a generator's yield adds its
 * own promises and microtask hops to every chunk of every stream (the reader beneath is one already).
 */
class ChatChunks implements AsyncIterableIterator<ChatChunk> {
  private readonly inner: AsyncIterator<SseEvent>;

  constructor(
    private readonly name: string,
    private readonly events: SseReader,
  ) {
    this.inner = events[Symbol.asyncIterator]();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<ChatChunk>> {
    const read = await this.inner.next();
    if (read.done) throw new UpstreamFailure('bad_response', `Upstream ${this.name} ended the stream without [DONE].`);
    if (read.value.data === '[DONE]') {
      // The reader drains what follows, so that the connection goes back to the pool.
      this.events.complete();
      await this.inner.return?.();
      return { done: true, value: undefined };
    }
    try {
      return { done: false, value: parseChunk(this.name, read.value.data) };
    } catch (err) {
      await this.inner.return?.();
      throw err;
    }
  }

  /** The reader stopped early: the reader beneath stops too (and discards the rest of the body). */
  async return(): Promise<IteratorResult<ChatChunk>> {
    await this.inner.return?.();
    return { done: true, value: undefined };
  }
}

function parseChunk(name: string, payload: string): ChatChunk {
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
  return parsed as ChatChunk;
}
