import { Injectable, Logger } from '@nestjs/common';
import { microsToUsd } from '../common/money';
import { isDatabaseUnavailable } from '../common/database/database-unavailable';
import { MetricsService } from '../metrics/metrics.service';

/** What a kept write is, for the log line should it be lost. */
export interface PendingWriteLabel {
  kind: 'settlement' | 'usage record';
  requestId: string;
  /** What it charges (0 for an uncharged usage record). */
  micros: bigint;
}

/** A write given up: the queue was full, or the process stopped before the database came back. It was logged. */
export class PendingWriteLost extends Error {}

interface Entry {
  label: PendingWriteLabel;
  attempt(): Promise<unknown>;
  resolve(result: unknown): void;
  reject(err: unknown): void;
}

const CAPACITY = 10_000;
/** Entries attempted together per round (settlements among them share one statement). */
const ROUND_SIZE = 200;
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 1000;

/**
 * Settlements and usage records of responses already delivered that could not be written because the
 * database was unreachable: kept in memory (bounded, oldest first) and retried with backoff until they
 * commit, so a short outage loses no charge. Each write must be safe to attempt again after an attempt
 * whose outcome is unknown (docs/operations.md, "Pending writes").
 */
@Injectable()
export class PendingWrites {
  private readonly logger = new Logger(PendingWrites.name);
  private readonly queue: Entry[] = [];
  private delayMs = FIRST_RETRY_MS;
  private timer: NodeJS.Timeout | undefined;
  private roundRunning: Promise<void> | null = null;
  /** Set by close: no retry after it, and new writes are refused. */
  private closed = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly metrics: MetricsService) {}

  /**
   * The outcome of `first` (a write already under way); if it fails because the database is unavailable,
   * `again` is kept and retried until it commits (keep). `again` must be safe after a first attempt of
   * unknown outcome. Rejects with any other error as it is, or with PendingWriteLost.
   */
  write<T>(label: PendingWriteLabel, first: Promise<T>, again: () => Promise<T>): Promise<T> {
    return first.catch((err: unknown) => {
      if (!isDatabaseUnavailable(err)) throw err;
      return this.keep(label, again);
    });
  }

  /**
   * Retries `attempt` until it succeeds, starting ~250 ms from now; resolves with its result. Rejects
   * with the attempt's error when that is not "database unavailable", or with PendingWriteLost.
   */
  private keep<T>(label: PendingWriteLabel, attempt: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(this.lose(label, 'the process is stopping'));
    if (this.queue.length >= CAPACITY) return Promise.reject(this.lose(label, `${CAPACITY} writes are pending already`));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ label, attempt, resolve: resolve as (r: unknown) => void, reject });
      this.changed();
      this.schedule();
    });
  }

  /** Resolves once nothing is pending (at once when nothing is). */
  whenIdle(): Promise<void> {
    if (this.queue.length === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** For shutdown: gives up on (and logs) every write still pending, and refuses new ones. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    // An attempt under way may still commit: its outcome decides whether it is lost.
    await this.roundRunning;
    for (const entry of this.queue.splice(0)) entry.reject(this.lose(entry.label, 'the process stopped before the database came back'));
    this.changed();
    for (const wake of this.idleWaiters.splice(0)) wake();
  }

  private schedule(): void {
    if (this.timer || this.roundRunning || this.closed || this.queue.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.roundRunning = this.round().finally(() => {
        this.roundRunning = null;
        this.afterRound();
      });
    }, this.delayMs);
  }

  /** Attempts the oldest entries together; backs off while the database is still unreachable. */
  private async round(): Promise<void> {
    const batch = this.queue.slice(0, ROUND_SIZE);
    let unavailable = false;
    await Promise.all(
      batch.map(async (entry) => {
        try {
          const result = await entry.attempt();
          this.remove(entry);
          entry.resolve(result);
        } catch (err) {
          if (isDatabaseUnavailable(err)) {
            unavailable = true;
          } else {
            this.remove(entry);
            entry.reject(err);
          }
        }
      }),
    );
    this.delayMs = unavailable ? Math.min(this.delayMs * 2, MAX_RETRY_MS) : 0;
  }

  private afterRound(): void {
    if (this.queue.length === 0) {
      this.delayMs = FIRST_RETRY_MS;
      for (const wake of this.idleWaiters.splice(0)) wake();
    }
    this.schedule();
  }

  private remove(entry: Entry): void {
    this.queue.splice(this.queue.indexOf(entry), 1);
    this.changed();
  }

  private lose(label: PendingWriteLabel, why: string): PendingWriteLost {
    this.metrics.pendingWriteLost();
    const message = `Unwritten ${label.kind} of request ${label.requestId} ($${microsToUsd(label.micros)}): ${why}`;
    this.logger.error({ requestId: label.requestId, amountMicros: label.micros.toString(), kind: label.kind }, message);
    return new PendingWriteLost(message);
  }

  private changed(): void {
    this.metrics.setPendingWrites(this.queue.length);
  }
}
