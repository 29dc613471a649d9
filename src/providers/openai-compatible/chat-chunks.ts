import { ChatChunk } from '../chat-contract';
import { SseReader } from '../http/sse-reader';
import { UpstreamFailure } from '../upstream-failure';

/**
 * A streamed chat completion's chunks, from the JSON `data:` payloads of OpenAI's stream. Ends at
 * `data: [DONE]` (nothing after it is read); an in-band `{"error": ...}` event, a payload that is not a JSON
 * object, or a stream that ends without `[DONE]` is an UpstreamFailure.
 */
export async function* chatChunks(name: string, events: SseReader): AsyncGenerator<ChatChunk> {
  for await (const { data } of events) {
    if (data === '[DONE]') {
      events.complete();
      return;
    }
    yield parseChunk(name, data);
  }
  throw new UpstreamFailure('bad_response', `Upstream ${name} ended the stream without [DONE].`);
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
