import { Logger } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { ThrottlerException } from '@nestjs/throttler';
import { redisForTests } from '../../test/support/own-redis';
import { MetricsService } from '../metrics/metrics.service';
import { AccountThrottlerGuard } from './account-throttler.guard';
import { BurstStoreUnavailable } from './burst-store-unavailable';
import { FixedWindowRedisStorage } from './fixed-window-redis-storage';
import { FixedWindowMemoryStorage, ThrottlerStorageRecord } from './fixed-window-storage';

class ChatControllerStub {
  create(): void {}
}

class MessagesControllerStub {
  create(): void {}
}

/** A storage with a bug of ours: it reads a window that it never stored (a TypeError, as a real slip would throw). */
class StorageWithABug extends FixedWindowMemoryStorage {
  async increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    const forgotten = new Map<string, { hits: number }>();
    forgotten.get(key)!.hits++;
    return super.increment(key, ttl, limit);
  }
}

function context(accountId: string, ip = '203.0.113.7', controller: typeof ChatControllerStub | typeof MessagesControllerStub = ChatControllerStub) {
  const headers: Record<string, string | number> = {};
  const req = { auth: { accountId, keyId: 'k' }, ip, headers: {} };
  // Fastify's reply: the guard sets its headers on Node's response under it, which streams write too.
  const res = { raw: { setHeader: (name: string, value: string | number) => (headers[name] = value) } };
  const ctx = new ExecutionContextHost([req, res], controller, controller.prototype.create);
  return { ctx, headers };
}

describe(AccountThrottlerGuard.name, () => {
  let sut: AccountThrottlerGuard;
  let storage: FixedWindowMemoryStorage;

  beforeAll(() => Logger.overrideLogger(false));

  beforeEach(async () => {
    storage = new FixedWindowMemoryStorage();
    sut = new AccountThrottlerGuard({ throttlers: [{ name: 'default', limit: 2, ttl: 60_000 }] }, storage, new Reflector());
    await sut.onModuleInit();
  });
  afterEach(() => storage.onApplicationShutdown());

  it('counts per account whatever the IP, and sets Retry-After when the account is over the limit', async () => {
    await expect(sut.canActivate(context('acc-1', '198.51.100.1').ctx)).resolves.toBe(true);
    await expect(sut.canActivate(context('acc-1', '198.51.100.2').ctx)).resolves.toBe(true);
    const third = context('acc-1', '198.51.100.3');
    await expect(sut.canActivate(third.ctx)).rejects.toBeInstanceOf(ThrottlerException);
    expect(third.headers['Retry-After']).toBeGreaterThanOrEqual(1);
  });

  it('gives every account its own budget, even from the same IP, under a key that names the account', async () => {
    for (let i = 0; i < 2; i++) await sut.canActivate(context('acc-1').ctx);
    await expect(sut.canActivate(context('acc-2').ctx)).resolves.toBe(true);
    expect([...storage.windows.keys()]).toEqual(['chat:default:account:acc-1', 'chat:default:account:acc-2']);
  });

  it('gives an account one budget across the routes behind it (chat and the routes that bridge onto chat)', async () => {
    await expect(sut.canActivate(context('acc-1').ctx)).resolves.toBe(true);
    await expect(sut.canActivate(context('acc-1', undefined, MessagesControllerStub).ctx)).resolves.toBe(true);
    await expect(sut.canActivate(context('acc-1', undefined, MessagesControllerStub).ctx)).rejects.toBeInstanceOf(ThrottlerException);
    expect([...storage.windows.keys()]).toEqual(['chat:default:account:acc-1']);
  });

  it('keeps fixed windows: requests refused while over the limit do not push the next window back', async () => {
    jest.useFakeTimers({ now: 1_000_000 });
    try {
      const guard = new AccountThrottlerGuard({ throttlers: [{ name: 'default', limit: 2, ttl: 10_000 }] }, storage, new Reflector());
      await guard.onModuleInit();
      const allowedPerWindow: number[] = [];
      for (let window = 0; window < 3; window++) {
        let allowed = 0;
        // A client retrying every 500 ms, whatever it is told.
        for (let tick = 0; tick < 20; tick++) {
          const attempt = context('acc-1');
          const passed = await guard.canActivate(attempt.ctx).catch((err) => {
            if (!(err instanceof ThrottlerException)) throw err;
            // Retry-After: whole seconds until this window ends, rounded up.
            expect(attempt.headers['Retry-After']).toBe(Math.ceil((10_000 - tick * 500) / 1000));
            return false;
          });
          if (passed) allowed++;
          jest.advanceTimersByTime(500);
        }
        allowedPerWindow.push(allowed);
      }
      expect(allowedPerWindow).toEqual([2, 2, 2]);
    } finally {
      jest.useRealTimers();
    }
  });

  it('lets requests through when the Redis counter store is unreachable, and counts each failure', async () => {
    // Nothing listens on port 1, and there is no offline queue: every command fails at once, as when Redis is down.
    let failures = 0;
    const metrics = { burstLimitStoreFailed: () => failures++ } as unknown as MetricsService;
    const unreachable = new FixedWindowRedisStorage('redis://127.0.0.1:1', metrics);
    const guard = new AccountThrottlerGuard({ throttlers: [{ name: 'default', limit: 1, ttl: 1000 }] }, unreachable, new Reflector());
    await guard.onModuleInit();
    try {
      for (let i = 0; i < 3; i++) await expect(guard.canActivate(context('acc-1').ctx)).resolves.toBe(true);
      expect(failures).toBe(3);
      // What the guard recognises: the store's own failure type, whatever the cause.
      await expect(unreachable.increment('k', 1000, 1)).rejects.toBeInstanceOf(BurstStoreUnavailable);
    } finally {
      unreachable.onApplicationShutdown();
    }
  });

  // A redis-server of its own (REDIS_URL's when none is installed; neither: skipped, saying so in one line).
  const redis = redisForTests('account-throttler.guard.spec');
  (redis.skip ? it.skip : it)('lets a request through when Redis answers the hit with an error (a reply error is the store failing)', async () => {
    const server = await redis.start();
    let failures = 0;
    const metrics = { burstLimitStoreFailed: () => failures++ } as unknown as MetricsService;
    const store = new FixedWindowRedisStorage(server.url, metrics);
    await store.onModuleInit();
    const accountId = `acc-wrongtype-${process.pid}-${Date.now()}`;
    const key = `burst:chat:default:account:${accountId}`;
    // A key of the wrong type: the script's INCR fails in Redis (WRONGTYPE), as OOM or READONLY would.
    await store.redis.sadd(key, 'x');
    const guard = new AccountThrottlerGuard({ throttlers: [{ name: 'default', limit: 1, ttl: 1000 }] }, store, new Reflector());
    await guard.onModuleInit();
    try {
      await expect(guard.canActivate(context(accountId).ctx)).resolves.toBe(true);
      expect(failures).toBe(1);
      await expect(store.increment(`chat:default:account:${accountId}`, 1000, 1)).rejects.toMatchObject({
        name: BurstStoreUnavailable.name,
        cause: expect.objectContaining({ message: expect.stringMatching(/WRONGTYPE/) }),
      });
    } finally {
      await store.redis.del(key);
      store.onApplicationShutdown();
      await server.stop();
    }
  });

  it('does not swallow a bug of ours: an error other than the store failing reaches the exception filter', async () => {
    const buggy = new StorageWithABug();
    const guard = new AccountThrottlerGuard({ throttlers: [{ name: 'default', limit: 2, ttl: 60_000 }] }, buggy, new Reflector());
    await guard.onModuleInit();
    try {
      await expect(guard.canActivate(context('acc-1').ctx)).rejects.toBeInstanceOf(TypeError);
    } finally {
      buggy.onApplicationShutdown();
    }
  });

  it('logs a Redis outage once, not once per failed request or reconnect', async () => {
    const errors: string[] = [];
    Logger.overrideLogger({ log: () => undefined, warn: () => undefined, error: (message: string) => errors.push(message) });
    const unreachable = new FixedWindowRedisStorage('redis://127.0.0.1:1', { burstLimitStoreFailed: () => undefined } as unknown as MetricsService);
    try {
      for (let i = 0; i < 20; i++) await unreachable.increment('k', 1000, 1).catch(() => undefined);
      // Reconnects keep failing meanwhile (each an ioredis 'error' event).
      await new Promise((r) => setTimeout(r, 400));
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(/^Redis for burst-limit counters unavailable/);
    } finally {
      unreachable.onApplicationShutdown();
      Logger.overrideLogger(false);
    }
  });
});
