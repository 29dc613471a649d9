import type { IncomingMessage } from 'node:http';

export type BodyWatchStop = 'too_large' | 'idle';

/**
 * Watches a request body as whoever reads it receives it: the first byte past `maxBytes`, or `idleMs`
 * without a byte, calls `onStop` once, as the byte arrives or the time passes, so that the client is
 * answered then rather than when it has finished sending. `end()` stops the watch.
 */
export class BodyWatch {
  private bytes = 0;
  private ended = false;
  private readonly idleTimer: NodeJS.Timeout;
  private readonly onData = (chunk: Buffer) => {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) this.stop('too_large');
    else this.idleTimer.refresh();
  };

  constructor(
    private readonly req: IncomingMessage,
    private readonly maxBytes: number,
    idleMs: number,
    private readonly onStop: (reason: BodyWatchStop) => void,
  ) {
    this.idleTimer = setTimeout(() => this.stop('idle'), idleMs);
    req.on('data', this.onData);
    // A client that leaves mid-body: the idle timer goes with it.
    req.once('close', () => this.end());
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.idleTimer);
    this.req.off('data', this.onData);
  }

  private stop(reason: BodyWatchStop): void {
    if (this.ended) return;
    this.end();
    this.onStop(reason);
  }
}
