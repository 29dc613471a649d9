import { Injectable } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import { AccountsService, AccountView } from '../billing/accounts.service';
import { SubscriptionStatus } from '../billing/account.entity';
import { ErrorCode, GatewayError } from '../errors';
import { usdToMicros } from '../common/money';
import { SubscriptionService } from '../entitlements/subscription.service';
import { ApiKey } from '../keys/api-key.entity';
import { CreatedKey, KeysService } from '../keys/keys.service';
import { UsagePeriod, UsageReportService } from '../usage/usage-report.service';

export interface KeyView {
  id: string;
  name: string | null;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

@Injectable()
export class AdminService {
  constructor(
    private readonly accounts: AccountsService,
    private readonly subscriptions: SubscriptionService,
    private readonly keys: KeysService,
    private readonly usageService: UsageReportService,
  ) {}

  async createAccount(name: string): Promise<AccountView> {
    const account = await this.accounts.create(name);
    return this.accounts.view(account.id);
  }

  account(id: string): Promise<AccountView> {
    return this.accounts.view(id);
  }

  async createKey(accountId: string, name: string | null): Promise<CreatedKey> {
    await this.accounts.findOrFail(accountId);
    return this.keys.create(accountId, name);
  }

  async listKeys(accountId: string): Promise<{ object: 'list'; data: KeyView[] }> {
    await this.accounts.findOrFail(accountId);
    return { object: 'list', data: (await this.keys.list(accountId)).map(keyView) };
  }

  async revokeKey(keyId: string): Promise<KeyView> {
    const key = await this.keys.revoke(keyId);
    if (!key) throw new GatewayError(ErrorCode.NotFound, `No key with id ${keyId}.`);
    return keyView(key);
  }

  async addCredits(accountId: string, amountUsd: number | string): Promise<AccountView> {
    try {
      await this.accounts.topUp(accountId, usdToMicros(amountUsd)!);
    } catch (err) {
      if (isNumericOverflow(err)) {
        throw new GatewayError(ErrorCode.InvalidRequest, 'This top-up would take the balance past the largest amount an account can hold.', 'amount_usd');
      }
      throw err;
    }
    return this.accounts.view(accountId);
  }

  async setSpendingLimit(accountId: string, limitUsd: number | string | null): Promise<AccountView> {
    await this.accounts.setMonthlyLimit(accountId, limitUsd === null ? null : usdToMicros(limitUsd)!);
    return this.accounts.view(accountId);
  }

  async setSubscription(accountId: string, status: SubscriptionStatus, endsAt: Date | null): Promise<AccountView> {
    await this.subscriptions.set(accountId, status, endsAt);
    return this.accounts.view(accountId);
  }

  async usage(accountId: string, period: UsagePeriod) {
    await this.accounts.findOrFail(accountId);
    const [summary, byDeployment] = await Promise.all([this.usageService.summary(accountId, period), this.usageService.byDeployment(accountId, period)]);
    return { account_id: accountId, ...summary, by_deployment: byDeployment };
  }
}

/** PostgreSQL's numeric_value_out_of_range: the bigint balance would overflow. */
function isNumericOverflow(err: unknown): boolean {
  return err instanceof QueryFailedError && (err.driverError as { code?: string } | undefined)?.code === '22003';
}

function keyView(key: ApiKey): KeyView {
  return {
    id: key.id,
    name: key.name,
    prefix: key.displayPrefix,
    created_at: key.createdAt.toISOString(),
    revoked_at: key.revokedAt?.toISOString() ?? null,
  };
}
