import { OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import Redis from 'ioredis';
import { MetricsService } from '../metrics/metrics.service';
import { BurstStoreUnavailable } from './burst-store-unavailable';
import { fixedWindowRecord, ThrottlerStorageRecord } from './fixed-window-storage';
import { RedisBreaker } from './redis-breaker';

/**
 * A Redis that answers is always asked, and waited for up to COMMAND_TIMEOUT_MS: far above what a busy
 * machine costs (a loaded 2-core CI box stalls a request ~250 ms at worst; a 30 ms deadline let requests
 * through unlimited several times a minute there, issue 22), yet short enough that a hung Redis costs the
 * requests in flight one second before the breaker opens (RedisBreaker: FAILURES_TO_OPEN in a row). Open,
 * no request waits for Redis. No offline queue, so a command cannot wait for a reconnect; a connection
 * that is down opens the breaker at once. Reconnection runs in the background, at most
 * MAX_RECONNECT_DELAY_MS apart, and a probe on reconnect closes the breaker, so the limit is back about a
 * second after Redis is.
 */
export const COMMAND_TIMEOUT_MS = 1000;
export const CONNECT_TIMEOUT_MS = 500;
export const MAX_RECONNECT_DELAY_MS = 1000;
const PROBE_KEY = 'burst:probe';
const PROBE_KEY_TTL_MS = 1000;

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

/** Thrown while the breaker is open, without a call to Redis; AccountThrottlerGuard lets the request through. */
const BREAKER_OPEN = new BurstStoreUnavailable('Redis for burst-limit counters is unavailable (breaker open)');

/** The counters in Redis (REDIS_URL), shared by every replica. Owns its connection. */
export class FixedWindowRedisStorage implements ThrottlerStorage, OnModuleInit, OnApplicationShutdown {
  readonly redis: BurstRedis;
  private readonly breaker: RedisBreaker;

  constructor(
    url: string,
    private readonly metrics: MetricsService,
  ) {
    this.redis = limiterRedis(url) as BurstRedis;
    this.redis.defineCommand('burstHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    // The probe is a hit like a request's, on a key of its own: a Redis that answers PING but refuses the
    // script (out of memory, a read-only replica) is not back.
    this.breaker = new RedisBreaker(() => answerWithin(this.redis.burstHit(PROBE_KEY, PROBE_KEY_TTL_MS), COMMAND_TIMEOUT_MS));
    // A connection error (a failed connect or reconnect) means Redis is away. Without an 'error' listener
    // ioredis would also emit an unhandled 'error' event on every failed reconnect.
    this.redis.on('error', (err: Error) => this.breaker.open(err));
    this.redis.on('ready', () => this.breaker.probe());
  }

  /**
   * Gives the first connection a moment before the app serves, so that the first requests after a
   * start are limited (and not logged as an outage); a Redis that is down holds the start 0.5 s at most.
   */
  onModuleInit(): Promise<void> {
    return firstConnection(this.redis);
  }

  async increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    if (this.breaker.isOpen || this.redis.status !== 'ready') {
      this.letThrough();
      // No connection: without an offline queue the command would fail at once, and Redis is away for sure.
      if (!this.breaker.isOpen) this.breaker.open(new Error(`no connection to Redis (${this.redis.status})`));
      throw BREAKER_OPEN;
    }
    // Outside the try: a command that cannot even be sent (a bug of ours) is not a Redis failure.
    const command = this.redis.burstHit(`burst:${key}`, ttl);
    let answer: [number, number];
    try {
      answer = await answerWithin(command, COMMAND_TIMEOUT_MS);
    } catch (err) {
      // Whatever the client rejects with (connection lost, a reply error such as OOM or READONLY, our timeout) is Redis's.
      this.letThrough();
      this.breaker.failed(err as Error);
      throw new BurstStoreUnavailable(`Redis for burst-limit counters failed: ${(err as Error).message}`, { cause: err });
    }
    this.breaker.succeeded();
    const [hits, msLeft] = answer;
    return fixedWindowRecord(hits, msLeft, limit);
  }

  onApplicationShutdown(): void {
    this.breaker.stop();
    this.redis.disconnect(false);
  }

  private letThrough(): void {
    this.metrics.burstLimitStoreFailed();
    this.breaker.letThrough();
  }
}

/**
 * Rejects when `command` has no answer `ms` after it was sent. Unlike ioredis's commandTimeout, the
 * deadline is checked only after the event loop has read the sockets (setImmediate runs after the poll
 * phase): under load, a timer can fire late with Redis's answer already waiting, and our own lag must
 * not count as a Redis failure.
 */
export function answerWithin<T>(command: Promise<T>, ms: number): Promise<T> {
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

/** Resolves once `redis` is ready, or after CONNECT_TIMEOUT_MS (a Redis that is down holds a start 0.5 s at most). */
export function firstConnection(redis: Redis): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  // Not events.once: it would reject on the 'error' of a Redis that is down.
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, CONNECT_TIMEOUT_MS);
    redis.on('ready', done);
  });
}

/**
 * A connection for a limiter's counters (the burst limit's, rpm and tpm's): no offline queue and no retries, so that
 * a Redis that is away fails a check at once (its breaker decides), reconnecting every MAX_RECONNECT_DELAY_MS at most.
 */
export function limiterRedis(url: string): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    connectTimeout: CONNECT_TIMEOUT_MS,
    // A command in flight when the connection drops fails then, instead of waiting for a reconnect.
    maxRetriesPerRequest: 0,
    // disconnect() while reconnecting ends a socket already closed, and ioredis then waits this long to destroy it.
    disconnectTimeout: 100,
    retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
    enableAutoPipelining: true,
  });
}
