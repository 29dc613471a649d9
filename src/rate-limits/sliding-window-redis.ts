import type Redis from 'ioredis';
import { answerWithin, COMMAND_TIMEOUT_MS, firstConnection, limiterRedis } from '../burst-limit/fixed-window-redis-storage';
import { RedisBreaker } from '../burst-limit/redis-breaker';
import { MAX_SCAN, Refusal, WINDOW_MS, WindowAsk, WindowsAnswer, WindowStore, WindowStoreUnavailable } from './sliding-window';

/**
 * One round trip, atomic, for every window of a request (the key's and the account's, rpm and tpm): drops the
 * admissions that left the window, decides on all of them, then counts the request in all or none. Each window is a
 * sorted set (member → admission time, Redis's clock: one clock for every replica) and a hash (member → tokens, and
 * `#sum`). The decision is MemoryWindowStore's (sliding-window.ts), line for line.
 * KEYS: per window its sorted set, then its hash. ARGV: window ms, member, tokens, max scan, then per window rpm, tpm (0: none).
 * Answers: admitted, then per window requests, tokens, refusal (0 none, 1 requests, 2 tokens, 3 too large), retry ms, reset ms.
 */
const HIT_SCRIPT = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window, member, tokens, maxScan = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local n = #KEYS / 2
local answers = {}
local admitted = 1
for i = 1, n do
  local z, h = KEYS[2 * i - 1], KEYS[2 * i]
  local rpm, tpm = tonumber(ARGV[3 + 2 * i]), tonumber(ARGV[4 + 2 * i])
  local sum = tonumber(redis.call('HGET', h, '#sum') or '0')
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', now - window)
  if #gone > 0 then
    for j = 1, #gone, 1000 do
      local part = {unpack(gone, j, math.min(j + 999, #gone))}
      for _, held in ipairs(redis.call('HMGET', h, unpack(part))) do sum = sum - (tonumber(held) or 0) end
      redis.call('HDEL', h, unpack(part))
    end
    redis.call('ZREMRANGEBYSCORE', z, '-inf', now - window)
    if sum < 0 then sum = 0 end
    redis.call('HSET', h, '#sum', sum)
  end
  local count = redis.call('ZCARD', z)
  local refused, retry = 0, 0
  if rpm > 0 and count + 1 > rpm then
    local at = redis.call('ZRANGE', z, count - rpm, count - rpm, 'WITHSCORES')
    refused, retry = 1, tonumber(at[2]) + window - now
  end
  if tpm > 0 and tokens > tpm then
    refused, retry = 3, window
  elseif tpm > 0 and sum + tokens > tpm then
    local need, freed, leaves = sum + tokens - tpm, 0, now
    local oldest = redis.call('ZRANGE', z, 0, maxScan - 1, 'WITHSCORES')
    for j = 1, #oldest, 2 do
      freed = freed + (tonumber(redis.call('HGET', h, oldest[j])) or 0)
      if freed >= need then leaves = tonumber(oldest[j + 1]); break end
    end
    local wait = leaves + window - now
    if wait > retry then refused, retry = 2, wait end
  end
  if refused > 0 then admitted = 0 end
  answers[i] = {count, sum, refused, retry}
end
local out = {admitted}
for i = 1, n do
  local z, h = KEYS[2 * i - 1], KEYS[2 * i]
  local a = answers[i]
  if admitted == 1 then
    a[1], a[2] = a[1] + 1, a[2] + tokens
    redis.call('ZADD', z, now, member)
    redis.call('HSET', h, member, tokens, '#sum', a[2])
    redis.call('PEXPIRE', z, window + 1000)
    redis.call('PEXPIRE', h, window + 1000)
  end
  local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
  local reset = 0
  if #first > 0 then reset = tonumber(first[2]) + window - now end
  for _, v in ipairs({a[1], a[2], a[3], a[4], reset}) do out[#out + 1] = v end
end
return out`;

/** The admission's tokens as the upstream counted them, in each window it is still in. KEYS: the hashes. ARGV: member, tokens. */
const TRUE_UP_SCRIPT = `
for _, h in ipairs(KEYS) do
  local held = redis.call('HGET', h, ARGV[1])
  if held then
    redis.call('HSET', h, ARGV[1], ARGV[2])
    redis.call('HINCRBY', h, '#sum', tonumber(ARGV[2]) - tonumber(held))
  end
end
return 0`;

const REFUSALS: Array<Refusal | null> = [null, 'requests', 'tokens', 'too_large'];
const PROBE_KEY = 'rl:probe';

type WindowRedis = Redis & {
  rateHit(keyCount: number, ...args: Array<string | number>): Promise<number[]>;
  rateTrueUp(keyCount: number, ...args: Array<string | number>): Promise<number>;
};

/**
 * The windows in Redis (REDIS_URL), shared by every replica, on a connection of their own. Outages follow the burst
 * limit's rules (docs/operations.md, "Redis unreachable, hung or restarting"): the same deadline and breaker, and the
 * request goes on without the limits (WindowStoreUnavailable) rather than failing.
 */
export class RedisWindowStore implements WindowStore {
  readonly redis: WindowRedis;
  private readonly breaker: RedisBreaker;

  constructor(url: string) {
    this.redis = limiterRedis(url) as WindowRedis;
    this.redis.defineCommand('rateHit', { lua: HIT_SCRIPT });
    this.redis.defineCommand('rateTrueUp', { lua: TRUE_UP_SCRIPT });
    // The probe is a check like a request's, on windows of its own without limits.
    const probe = () => answerWithin(this.redis.rateHit(2, `${PROBE_KEY}:z`, `${PROBE_KEY}:h`, WINDOW_MS, 'probe', 0, 1, 0, 0), COMMAND_TIMEOUT_MS);
    this.breaker = new RedisBreaker(probe, {
      logger: 'RateLimits',
      store: 'rate-limit windows',
      meanwhile: 'chat requests are let through without their rpm and tpm',
      back: 'rpm and tpm apply again',
    });
    this.redis.on('error', (err: Error) => this.breaker.open(err));
    this.redis.on('ready', () => this.breaker.probe());
  }

  /** As the burst limit's storage: the first connection gets a moment (0.5 s at most) before the app serves. */
  ready(): Promise<void> {
    return firstConnection(this.redis);
  }

  async hit(asks: WindowAsk[], member: string, tokens: number): Promise<WindowsAnswer> {
    const keys = asks.flatMap((ask) => [`${ask.key}:z`, `${ask.key}:h`]);
    const limits = asks.flatMap((ask) => [ask.rpm ?? 0, ask.tpm ?? 0]);
    const out = await this.ask(() => this.redis.rateHit(keys.length, ...keys, WINDOW_MS, member, tokens, MAX_SCAN, ...limits));
    return {
      admitted: out[0] === 1,
      windows: asks.map((_, i) => {
        const [requests, held, refused, retryMs, resetMs] = out.slice(1 + 5 * i, 6 + 5 * i);
        return { requests, tokens: held, refused: REFUSALS[refused], retryMs, resetMs };
      }),
    };
  }

  async trueUp(keys: string[], member: string, tokens: number): Promise<void> {
    const hashes = keys.map((key) => `${key}:h`);
    await this.ask(() => this.redis.rateTrueUp(hashes.length, ...hashes, member, tokens), false);
  }

  close(): void {
    this.breaker.stop();
    this.redis.disconnect(false);
  }

  /** `request`: a request's check, which goes on unlimited should Redis fail (counted in the outage's log line). */
  private async ask<T>(send: () => Promise<T>, request = true): Promise<T> {
    if (this.breaker.isOpen || this.redis.status !== 'ready') {
      if (request) this.breaker.letThrough();
      if (!this.breaker.isOpen) this.breaker.open(new Error(`no connection to Redis (${this.redis.status})`));
      throw new WindowStoreUnavailable('Redis for rate-limit windows is unavailable (breaker open)');
    }
    // Outside the try: a command that cannot even be sent (a bug of ours) is not a Redis failure.
    const command = send();
    try {
      const answer = await answerWithin(command, COMMAND_TIMEOUT_MS);
      this.breaker.succeeded();
      return answer;
    } catch (err) {
      if (request) this.breaker.letThrough();
      this.breaker.failed(err as Error);
      throw new WindowStoreUnavailable(`Redis for rate-limit windows failed: ${(err as Error).message}`, { cause: err });
    }
  }
}
