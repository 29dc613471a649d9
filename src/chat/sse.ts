import type { Response } from 'express';

/**
 * Writes server-sent events with backpressure: `send` waits while the client's socket buffer is full,
 * so a slow reader slows the upstream read instead of growing the gateway's memory.
 */
export class SseWriter {
  private corked = false;

  constructor(private readonly res: Response) {}

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

  async send(payload: unknown): Promise<void> {
    await this.write(`data: ${JSON.stringify(payload)}\n\n`);
  }

  /** An event with its name on an `event:` line, as the Responses API sends them. */
  async sendNamed(name: string, payload: unknown): Promise<void> {
    await this.write(`event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`);
  }

  end(lastEvent?: string): void {
    if (!this.isOpen) return;
    if (!this.hasStarted) this.start();
    // Node 24's end() on a corked response sends the chunked terminator ahead of the corked events
    // (docs/decisions.md, "Streams on Node 24"): the client would see the body end mid-stream.
    this.flush();
    this.res.end(lastEvent === undefined ? undefined : `data: ${lastEvent}\n\n`);
  }

  /**
   * Events relayed in the same tick (one upstream read usually carries several) leave in one socket
   * write instead of one each.
   */
  private coalesce(): void {
    if (this.corked) return;
    this.corked = true;
    this.res.cork();
    process.nextTick(() => this.flush());
  }

  private flush(): void {
    if (!this.corked) return;
    this.corked = false;
    this.res.uncork();
  }

  private async write(text: string): Promise<void> {
    if (!this.isOpen) return;
    if (!this.hasStarted) this.start();
    this.coalesce();
    if (this.res.write(text)) return;
    await new Promise<void>((resolve) => {
      const resume = () => {
        this.res.off('drain', resume);
        this.res.off('close', resume);
        resolve();
      };
      this.res.on('drain', resume);
      this.res.on('close', resume);
    });
  }
}
