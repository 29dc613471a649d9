import { Logger } from '@nestjs/common';

/** Failed commands in a row that open the breaker: a slow or lost answer now and then is not an outage. */
export const FAILURES_TO_OPEN = 3;
/** While open, how often a probe asks Redis whether it is back (one probe at a time). */
export const PROBE_INTERVAL_MS = 500;
/** At most one error line about an outage per this interval. */
export const OUTAGE_LOG_INTERVAL_MS = 10_000;

export type RedisBreakerState = 'closed' | 'open' | 'half-open';

/**
 * Whether the burst limit asks Redis (docs/operations.md, "Redis unreachable, hung or restarting").
 * Closed: every request's hit goes to Redis. Open after FAILURES_TO_OPEN failed commands in a row, or
 * at once when the connection is known to be down: requests are let through without a Redis call,
 * and every PROBE_INTERVAL_MS (or when the caller calls `probe()`, on reconnect) `probeRedis` is sent,
 * one at a time (half-open while it runs); its success closes the breaker, its failure keeps it open.
 * The probe is the storage's own command, not a client's request, so no request waits for a Redis
 * that may hang. Logs the outage at most once per OUTAGE_LOG_INTERVAL_MS, and once when it is over.
 */
/** What an outage costs, in the breaker's log lines: whose Redis it is and what goes unlimited meanwhile. */
export interface RedisBreakerWording {
  logger: string;
  /** "Redis for <store>" */
  store: string;
  /** What happens while it is away, and once it is back. */
  meanwhile: string;
  back: string;
}

const BURST_LIMIT_WORDING: RedisBreakerWording = {
  logger: 'BurstLimit',
  store: 'burst-limit counters',
  meanwhile: 'chat requests are let through unlimited',
  back: 'the burst limit applies again',
};

export class RedisBreaker {
  private readonly logger: Logger;
  private failuresInARow = 0;
  private probeTimer: NodeJS.Timeout | null = null;
  private probing = false;
  private stopped = false;
  private lastLineAt = -Infinity;
  private letThroughSinceLine = 0;
  private reported = false;

  constructor(
    private readonly probeRedis: () => Promise<unknown>,
    private readonly wording: RedisBreakerWording = BURST_LIMIT_WORDING,
  ) {
    this.logger = new Logger(wording.logger);
  }

  get state(): RedisBreakerState {
    if (!this.probeTimer) return 'closed';
    return this.probing ? 'half-open' : 'open';
  }

  get isOpen(): boolean {
    return this.probeTimer !== null;
  }

  /** A command answered in time: the failures so far were not an outage. An open breaker waits for its probe. */
  succeeded(): void {
    this.failuresInARow = 0;
  }

  /** A command failed or timed out. */
  failed(err: Error): void {
    this.failuresInARow++;
    if (this.isOpen || this.failuresInARow >= FAILURES_TO_OPEN) this.open(err);
  }

  /** Redis is away for sure (no connection): open without waiting for more failures. */
  open(err: Error): void {
    if (this.stopped) return;
    this.probeTimer ??= setInterval(() => this.probe(), PROBE_INTERVAL_MS).unref();
    this.report(err);
  }

  /** A request let through without the limit: counted in the next outage line. */
  letThrough(): void {
    this.letThroughSinceLine++;
  }

  /** Asks Redis now whether it is back, unless the breaker is closed or a probe is already out. */
  probe(): void {
    if (!this.isOpen || this.probing) return;
    this.probing = true;
    this.probeRedis().then(
      () => {
        this.probing = false;
        this.close();
      },
      (err: Error) => {
        this.probing = false;
        this.report(err);
      },
    );
  }

  stop(): void {
    this.stopped = true;
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.probeTimer = null;
  }

  private close(): void {
    if (!this.probeTimer) return;
    clearInterval(this.probeTimer);
    this.probeTimer = null;
    this.failuresInARow = 0;
    if (!this.reported) return;
    this.logger.log(`Redis for ${this.wording.store} is back; ${this.wording.back}`);
    this.reported = false;
    this.letThroughSinceLine = 0;
  }

  private report(err: Error): void {
    const now = Date.now();
    if (this.stopped || now - this.lastLineAt < OUTAGE_LOG_INTERVAL_MS) return;
    this.logger.error(
      `Redis for ${this.wording.store} unavailable, ${this.wording.meanwhile} (${this.letThroughSinceLine} since the last line): ${err.message}`,
    );
    this.lastLineAt = now;
    this.letThroughSinceLine = 0;
    this.reported = true;
  }
}
