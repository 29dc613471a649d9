import { OnApplicationShutdown } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';

/** What a storage answers per hit (the package does not export the interface itself). */
export type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/**
 * Fixed-window counters for the chat burst limit: a window opens at an account's first request and
 * lasts `ttl` ms; every request in it counts, and those past the limit are refused until it ends.
 * Refused requests never extend the window, so a client that keeps retrying still gets the limit
 * in every following window (the stock storages re-arm their block from the hits counted meanwhile).
 * `blockDuration` is not used: the block is the rest of the window.
 */
export function fixedWindowRecord(hits: number, msLeft: number, limit: number): ThrottlerStorageRecord {
  // Whole seconds, rounded up, as Retry-After and X-RateLimit-Reset carry them.
  const secondsLeft = Math.max(1, Math.ceil(msLeft / 1000));
  const isBlocked = hits > limit;
  return { totalHits: hits, timeToExpire: secondsLeft, isBlocked, timeToBlockExpire: isBlocked ? secondsLeft : 0 };
}

const SWEEP_INTERVAL_MS = 60_000;

/** The counters in this process, when no REDIS_URL is set. */
export class FixedWindowMemoryStorage implements ThrottlerStorage, OnApplicationShutdown {
  readonly windows = new Map<string, { hits: number; endsAt: number }>();
  private readonly sweeper = setInterval(() => this.dropEnded(Date.now()), SWEEP_INTERVAL_MS).unref();

  async increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    const now = Date.now();
    let window = this.windows.get(key);
    if (!window || window.endsAt <= now) {
      window = { hits: 0, endsAt: now + ttl };
      this.windows.set(key, window);
    }
    window.hits++;
    return fixedWindowRecord(window.hits, window.endsAt - now, limit);
  }

  onApplicationShutdown(): void {
    clearInterval(this.sweeper);
    this.windows.clear();
  }

  private dropEnded(now: number): void {
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
  }
}
