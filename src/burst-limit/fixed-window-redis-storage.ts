import { Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import Redis from 'ioredis';
import { MetricsService } from '../metrics/metrics.service';
import { fixedWindowRecord, ThrottlerStorageRecord } from './fixed-window-storage';

/**
 * Fail fast while Redis is away: a chat request must not wait for it (the guard lets it through).
 * No offline queue, so a command sent while disconnected fails at once; a command to a Redis that
 * hangs fails after COMMAND_TIMEOUT_MS (answerWithin); reconnection runs in the background, at most
 * MAX_RECONNECT_DELAY_MS apart, so the limit is back about a second after Redis is.
 */
const COMMAND_TIMEOUT_MS = 30;
const CONNECT_TIMEOUT_MS = 500;
const MAX_RECONNECT_DELAY_MS = 1000;
const OUTAGE_LOG_INTERVAL_MS = 10_000;

// One round trip, atomic: the window's TTL is set by its first hit only, so later hits, refused or
// not, never move its end. A key found without TTL (never expected) gets one rather than living forever.
const HIT_SCRIPT = `
local hits = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {hits, ttl}`;

type BurstRedis = Redis & { burstHit(key: string, ttlMs: number): Promise<[number, number]> };

/** The counters in Redis (REDIS_URL), shared by every replica. Owns its connection. */
export class FixedWindowRedisStorage implements ThrottlerStorage, OnModuleInit, OnApplicationShutdown {
  readonly redis: BurstRedis;
  private readonly outage = new OutageLog();

  constructor(
    url: string,
    private readonly metrics: MetricsService,
  ) {
    this.redis = new Redis(url, {
      enableOfflineQueue: false,
      connectTimeout: CONNECT_TIMEOUT_MS,
      // A command in flight when the connection drops fails then, instead of waiting for a reconnect.
      maxRetriesPerRequest: 0,
      // disconnect() while reconnecting ends a socket already closed, and ioredis then waits this long to destroy it.
      disconnectTimeout: 100,
      retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
      enableAutoPipelining: true,
    }) as BurstRedis;
    this.redis.defineCommand('burstHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    // Without an 'error' listener ioredis would emit an unhandled 'error' event on every failed reconnect.
    this.redis.on('error', (err: Error) => this.outage.failed(err));
    this.redis.on('ready', () => this.outage.recovered());
  }

  /**
   * Gives the first connection a moment before the app serves, so that the first requests after a
   * start are limited (and not logged as an outage); a Redis that is down holds the start 0.5 s at most.
   */
  async onModuleInit(): Promise<void> {
    if (this.redis.status === 'ready') return;
    // Not events.once: it would reject on the 'error' of a Redis that is down.
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.redis.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, CONNECT_TIMEOUT_MS);
      this.redis.on('ready', done);
    });
  }

  async increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    try {
      const [hits, msLeft] = await answerWithin(this.redis.burstHit(`burst:${key}`, ttl), COMMAND_TIMEOUT_MS);
      return fixedWindowRecord(hits, msLeft, limit);
    } catch (err) {
      this.metrics.burstLimitStoreFailed();
      this.outage.failed(err as Error);
      throw err;
    }
  }

  onApplicationShutdown(): void {
    this.redis.disconnect(false);
  }
}

/**
 * Rejects when `command` has no answer `ms` after it was sent. Unlike ioredis's commandTimeout, the
 * deadline is checked only after the event loop has read the sockets (setImmediate runs after the poll
 * phase): under load, a timer can fire late with Redis's answer already waiting, and our own lag must
 * not count as a Redis failure (measured: 109 of 29,000 requests let through unlimited at 100 connections).
 */
function answerWithin<T>(command: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(
      () =>
        setImmediate(() => {
          if (settled) return;
          settled = true;
          reject(new Error(`Redis did not answer within ${ms} ms`));
        }),
      ms,
    );
    command.then(
      (answer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(answer);
      },
      (err: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/** At most one line per OUTAGE_LOG_INTERVAL_MS about the outage, and one when Redis is back. */
class OutageLog {
  private readonly logger = new Logger('BurstLimit');
  private lastLineAt = -Infinity;
  private failuresSinceLine = 0;
  private reported = false;

  failed(err: Error): void {
    this.failuresSinceLine++;
    const now = Date.now();
    if (now - this.lastLineAt < OUTAGE_LOG_INTERVAL_MS) return;
    this.logger.error(
      `Redis for burst-limit counters unavailable, chat requests are let through unlimited (${this.failuresSinceLine} errors since the last line): ${err.message}`,
    );
    this.lastLineAt = now;
    this.failuresSinceLine = 0;
    this.reported = true;
  }

  recovered(): void {
    if (!this.reported) return;
    this.logger.log('Redis for burst-limit counters is back; the burst limit applies again');
    this.reported = false;
    this.failuresSinceLine = 0;
  }
}
