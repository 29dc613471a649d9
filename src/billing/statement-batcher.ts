interface Pending<I, O> {
  item: I;
  resolve(result: O): void;
  reject(err: unknown): void;
}

/**
 * Group commit for billing statements: an item is sent at once while fewer than `maxInFlight`
 * calls run; otherwise it waits for the next call, which takes every item queued meanwhile. Unloaded,
 * each item is its own call (no added latency); under load, many requests share one round trip and
 * one commit, which is what lets PostgreSQL keep up on the same cores as the gateway.
 *
 * An item nobody waits for (a settlement after its response was sent) may linger up to `lingerMs`
 * for company; an item submitted without lingering, or flush(), sends everything queued at once.
 */
export class StatementBatcher<I, O> {
  private readonly queue: Pending<I, O>[] = [];
  private inFlight = 0;
  /** The queue is to be sent as soon as a call is free (not lingering). */
  private due = false;
  private lingerTimer: NodeJS.Timeout | undefined;

  /** `execute` returns one result per item, in the items' order. */
  constructor(
    private readonly execute: (items: I[]) => Promise<O[]>,
    private readonly maxInFlight: number,
    private readonly maxBatch: number,
    private readonly lingerMs = 0,
  ) {}

  submit(item: I, linger = false): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!linger || this.lingerMs <= 0) this.due = true;
      else if (!this.due && !this.lingerTimer) this.lingerTimer = setTimeout(() => this.flush(), this.lingerMs);
      this.drain();
    });
  }

  /** Sends what is queued without waiting for the linger to end. */
  flush(): void {
    this.due = true;
    this.drain();
  }

  private drain(): void {
    while (this.due && this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      void this.run(batch).finally(() => {
        this.inFlight--;
        this.drain();
      });
    }
    if (this.queue.length === 0) {
      this.due = false;
      clearTimeout(this.lingerTimer);
      this.lingerTimer = undefined;
    }
  }

  private async run(batch: Pending<I, O>[]): Promise<void> {
    try {
      const results = await this.execute(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(results[i]));
    } catch (err) {
      if (batch.length === 1) {
        batch[0].reject(err);
        return;
      }
      // The batch rolled back as a whole: run each item alone, so only a faulty one fails.
      await Promise.all(
        batch.map((p) =>
          this.execute([p.item]).then(
            ([result]) => p.resolve(result),
            (itemErr: unknown) => p.reject(itemErr),
          ),
        ),
      );
    }
  }
}
