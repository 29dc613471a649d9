import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { EventEmitter } from 'node:events';
import { DataSource } from 'typeorm';
import { ErrorCode, GatewayError } from '../errors';
import { EntitlementGuard, IncludedFeature } from './entitlement.guard';
import { FairUseGrant, FairUseService } from './fair-use.service';

class Routes {
  @IncludedFeature('speech') speech() {}
  plain() {}
}

const DAY = 86_400_000;

describe(EntitlementGuard.name, () => {
  let sut: EntitlementGuard;
  let findOne: jest.Mock;
  let fairUse: { consume: jest.Mock; attach: jest.Mock; giveBackFor: jest.Mock };
  let res: EventEmitter & { statusCode: number; writableFinished: boolean };
  const req = { auth: { accountId: 'acc-1', keyId: 'key-1' }, id: 'req-1' };

  const contextFor = (handler: keyof Routes) => new ExecutionContextHost([req, { raw: res }], Routes, Routes.prototype[handler]);
  const codeOf = (promise: Promise<unknown>) => promise.then(() => null, (err: GatewayError) => err.code);

  beforeEach(() => {
    findOne = jest.fn();
    fairUse = { consume: jest.fn(), attach: jest.fn(), giveBackFor: jest.fn().mockResolvedValue(undefined) };
    const db = { getRepository: jest.fn(() => ({ findOne })) } as unknown as DataSource;
    sut = new EntitlementGuard(new Reflector(), fairUse as unknown as FairUseService, db);
    res = Object.assign(new EventEmitter(), { statusCode: 200, writableFinished: false });
  });

  it('lets routes without @IncludedFeature through without looking anything up', async () => {
    await expect(sut.canActivate(contextFor('plain'))).resolves.toBe(true);
    expect(findOne).not.toHaveBeenCalled();
    expect(fairUse.consume).not.toHaveBeenCalled();
  });

  it.each([
    ['no subscription', { subscriptionStatus: 'none', subscriptionEndsAt: null }],
    ['an expired trial', { subscriptionStatus: 'trial', subscriptionEndsAt: new Date(Date.now() - DAY) }],
    ['an expired subscription', { subscriptionStatus: 'active', subscriptionEndsAt: new Date(Date.now() - 1000) }],
  ])('refuses %s with subscription_required, taking nothing from fair use', async (_, account) => {
    findOne.mockResolvedValue({ id: 'acc-1', ...account });
    expect(await codeOf(sut.canActivate(contextFor('speech')))).toBe(ErrorCode.SubscriptionRequired);
    expect(fairUse.consume).not.toHaveBeenCalled();
  });

  it('refuses with fair_use_limit_reached when the allowance is used up', async () => {
    findOne.mockResolvedValue({ id: 'acc-1', subscriptionStatus: 'trial', subscriptionEndsAt: new Date(Date.now() + DAY) });
    fairUse.consume.mockResolvedValue(null);
    expect(await codeOf(sut.canActivate(contextFor('speech')))).toBe(ErrorCode.FairUseLimitReached);
    expect(fairUse.consume).toHaveBeenCalledWith('acc-1');
  });

  describe('with an active subscription and allowance left', () => {
    const grant = new FairUseGrant('acc-1', '2026-11-01');

    beforeEach(() => {
      findOne.mockResolvedValue({ id: 'acc-1', subscriptionStatus: 'active', subscriptionEndsAt: null });
      fairUse.consume.mockResolvedValue(grant);
    });

    it('lets the request through holding one fair-use request', async () => {
      await expect(sut.canActivate(contextFor('speech'))).resolves.toBe(true);
      expect(fairUse.attach).toHaveBeenCalledWith(req, grant);
    });

    it('keeps the request when the response completes with a 2xx', async () => {
      await sut.canActivate(contextFor('speech'));
      res.writableFinished = true;
      res.emit('close');
      expect(fairUse.giveBackFor).not.toHaveBeenCalled();
    });

    it.each([
      ['a 4xx', 400, true],
      ['a 5xx', 502, true],
      ['a 2xx cut short', 200, false],
    ])('gives the request back when the response is %s', async (_, status, finished) => {
      await sut.canActivate(contextFor('speech'));
      res.statusCode = status;
      res.writableFinished = finished;
      res.emit('close');
      expect(fairUse.giveBackFor).toHaveBeenCalledWith(req);
    });
  });
});
