import { Transform, TransformCallback } from 'node:stream';

export type BodyMeterStop = 'too_large' | 'idle';

/**
 * Passes a request body through while counting it: the first byte past `maxBytes`, or `idleMs` without a
 * byte, stops it (nothing more is passed on) and calls `onStop` once, as the byte arrives or the time
 * passes, so that the client is answered then rather than when it has finished sending.
 */
export class BodyMeter extends Transform {
  private bytes = 0;
  private stopped = false;
  private readonly idleTimer: NodeJS.Timeout;

  constructor(
    private readonly maxBytes: number,
    idleMs: number,
    private readonly onStop: (reason: BodyMeterStop) => void,
  ) {
    super();
    this.idleTimer = setTimeout(() => this.stop('idle'), idleMs);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.stopped) return callback();
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      this.stop('too_large');
      return callback();
    }
    this.idleTimer.refresh();
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    clearTimeout(this.idleTimer);
    callback();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    clearTimeout(this.idleTimer);
    callback(err);
  }

  private stop(reason: BodyMeterStop): void {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.idleTimer);
    this.onStop(reason);
  }
}
