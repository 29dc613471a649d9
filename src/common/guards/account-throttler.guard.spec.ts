import { Logger } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { ThrottlerException, ThrottlerStorageService } from '@nestjs/throttler';
import { AccountThrottlerGuard } from './account-throttler.guard';

class ChatControllerStub {
  create(): void {}
}

function context(accountId: string, ip = '203.0.113.7') {
  const headers: Record<string, string | number> = {};
  const req = { auth: { accountId, keyId: 'k' }, ip, headers: {} };
  const res = { header: (name: string, value: string | number) => (headers[name] = value) };
  const ctx = new ExecutionContextHost([req, res], ChatControllerStub, ChatControllerStub.prototype.create);
  return { ctx, headers };
}

describe(AccountThrottlerGuard.name, () => {
  let sut: AccountThrottlerGuard;
  let storage: ThrottlerStorageService;

  beforeAll(() => Logger.overrideLogger(false));

  beforeEach(async () => {
    storage = new ThrottlerStorageService();
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
    expect([...storage.storage.keys()]).toEqual(['ChatControllerStub.create:default:account:acc-1', 'ChatControllerStub.create:default:account:acc-2']);
  });

  it('lets requests through when the Redis counter store is unreachable', async () => {
    // Never connected and no offline queue: every command fails at once, as when Redis is down.
    const unreachable = new ThrottlerStorageRedisService('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false });
    const guard = new AccountThrottlerGuard({ throttlers: [{ name: 'default', limit: 1, ttl: 1000 }] }, unreachable, new Reflector());
    await guard.onModuleInit();
    try {
      await expect(guard.canActivate(context('acc-1').ctx)).resolves.toBe(true);
    } finally {
      unreachable.onModuleDestroy();
    }
  });
});
