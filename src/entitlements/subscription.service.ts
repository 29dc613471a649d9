import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Account, SubscriptionStatus } from '../billing/account.entity';
import { ErrorCode, GatewayError } from '../errors';

export const TRIAL_DAYS = 14;
const DAY_MS = 86_400_000;

/** Entitled = an active subscription not past its end, or a trial within its 14 days (DESIGN.md section 7). */
export function isEntitled(account: Pick<Account, 'subscriptionStatus' | 'subscriptionEndsAt'>, now = new Date()): boolean {
  const { subscriptionStatus: status, subscriptionEndsAt: endsAt } = account;
  if (status === 'active') return endsAt === null || endsAt > now;
  if (status === 'trial') return endsAt !== null && endsAt > now;
  return false;
}

@Injectable()
export class SubscriptionService {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * `trial` ends 14 days after it starts unless `endsAt` says otherwise, and an account gets one;
   * `active` without `endsAt` runs until changed; `none` ends any entitlement.
   */
  async set(accountId: string, status: SubscriptionStatus, endsAt: Date | null, now = new Date()): Promise<void> {
    await this.db.transaction(async (tx) => {
      const account = await tx.getRepository(Account).findOne({ where: { id: accountId }, lock: { mode: 'pessimistic_write' } });
      if (!account) throw new GatewayError(ErrorCode.NotFound, `No account with id ${accountId}.`);
      const alreadyOnTrial = account.subscriptionStatus === 'trial';
      if (status === 'trial' && account.trialUsed && !alreadyOnTrial) {
        throw new GatewayError(ErrorCode.InvalidRequest, 'This account has already used its trial.', 'status', 409);
      }
      const update: Partial<Account> = { subscriptionStatus: status };
      if (status === 'trial') {
        update.trialUsed = true;
        update.subscriptionEndsAt = endsAt ?? (alreadyOnTrial ? account.subscriptionEndsAt : new Date(now.getTime() + TRIAL_DAYS * DAY_MS));
      } else {
        update.subscriptionEndsAt = status === 'active' ? endsAt : null;
      }
      await tx.getRepository(Account).update({ id: accountId }, update);
    });
  }
}
