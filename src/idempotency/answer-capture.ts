import type { ServerResponse } from 'node:http';

/** The headers a replay repeats: the body's type and length framing aside, the gateway's own about the answer. */
const KEPT_HEADER = /^(content-type|content-disposition|x-gateway-)/;

/**
 * Records the bytes a response sends (res.write and res.end, as the JSON answer, SseWriter and the speech relay
 * use them), up to `maxBytes`; past it, the answer is marked too large and no longer recorded. `beforeEnd` runs
 * when the last bytes are handed over and before they leave: a repeat sent once the client has the whole answer
 * finds it kept.
 */
export class AnswerCapture {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  tooLarge = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly maxBytes: number,
    beforeEnd: () => Promise<void>,
  ) {
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    (res as { write: unknown }).write = (...args: unknown[]) => {
      this.add(args[0], args[1]);
      return write(...args);
    };
    let ending = false;
    (res as { end: unknown }).end = (...args: unknown[]) => {
      if (ending) return res;
      ending = true;
      if (typeof args[0] !== 'function') this.add(args[0], args[1]);
      void beforeEnd().finally(() => end(...args));
      return res;
    };
  }

  get body(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }

  headers(): Record<string, string> {
    const kept: Record<string, string> = {};
    for (const [name, value] of Object.entries(this.res.getHeaders())) {
      if (KEPT_HEADER.test(name) && value !== undefined) kept[name] = Array.isArray(value) ? value.join(', ') : String(value);
    }
    return kept;
  }

  private add(chunk: unknown, encoding: unknown): void {
    if (this.tooLarge || chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const bytes = Buffer.isBuffer(chunk)
      ? chunk
      : chunk instanceof Uint8Array
        ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
        : Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
    if (this.size + bytes.length > this.maxBytes) {
      this.tooLarge = true;
      this.chunks.length = 0;
      return;
    }
    // A copy: a caller may reuse its buffer after write returns.
    this.chunks.push(Buffer.from(bytes));
    this.size += bytes.length;
  }
}
