import type { ServerResponse } from 'node:http';
import { drained } from '../common/http/drained';

/**
 * Past this many characters of events waiting in one tick, they are handed to the response at once, so
 * that a fast upstream read cannot grow them without bound before backpressure applies (the socket's own
 * buffer size, Node's default highWaterMark).
 */
const MAX_PENDING_CHARS = 16 * 1024;

/**
 * What a write leaves to its caller: a promise to await while the client's socket buffer is full, else
 * nothing (no promise and no microtask per event on the hot path; `await` takes either).
 */
export type Backpressure = Promise<void> | undefined;

/**
 * Writes server-sent events with backpressure: `send` waits while the client's socket buffer is full,
 * so a slow reader slows the upstream read instead of growing the gateway's memory.
 */
export class SseWriter {
  /** Events sent in this tick, not yet handed to the response. */
  private pending = '';

  constructor(private readonly res: ServerResponse) {}

  get hasStarted(): boolean {
    return this.res.headersSent;
  }

  /** False once the client went away. */
  get isOpen(): boolean {
    return !this.res.destroyed && !this.res.writableEnded;
  }

  private start(): void {
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      // nginx and compatible proxies buffer responses unless told not to.
      'x-accel-buffering': 'no',
    });
  }

  send(payload: unknown): Backpressure {
    return this.write(`data: ${JSON.stringify(payload)}\n\n`);
  }

  /** An event with its name on an `event:` line, as the Responses API sends them. */
  sendNamed(name: string, payload: unknown): Backpressure {
    return this.write(`event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`);
  }

  /** An event whose data is already JSON text (relayed as an upstream sent it). */
  sendRaw(name: string, data: string): Backpressure {
    return this.write(`event: ${name}\ndata: ${data}\n\n`);
  }

  end(lastEvent?: string): void {
    if (!this.isOpen) return;
    if (!this.hasStarted) this.start();
    const text = this.pending + (lastEvent === undefined ? '' : `data: ${lastEvent}\n\n`);
    this.pending = '';
    this.res.end(text === '' ? undefined : text);
  }

  /**
   * Events sent in the same tick (one upstream read usually carries several) go to the response as one
   * write: each `res.write` is a chunk of its own, with its framing, in the socket's write.
   */
  private write(text: string): Backpressure {
    if (!this.isOpen) return undefined;
    if (!this.hasStarted) {
      this.start();
      this.sendNow(text);
    } else {
      if (this.pending === '') process.nextTick(() => this.flush());
      this.pending += text;
      if (this.pending.length >= MAX_PENDING_CHARS) this.flush();
    }
    return this.res.writableNeedDrain ? drained(this.res) : undefined;
  }

  /**
   * The first event leaves with the status line at once, not after the rest of its upstream read has been
   * relayed: a bare `res.write` would wait for the end of the tick (Node corks the socket until then).
   */
  private sendNow(text: string): void {
    this.res.cork();
    this.res.write(text);
    this.res.uncork();
  }

  private flush(): void {
    if (this.pending === '' || !this.isOpen) return;
    const text = this.pending;
    this.pending = '';
    this.res.write(text);
  }
}
