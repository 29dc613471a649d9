import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';
import { QueryFailedError } from 'typeorm';
import { AccountsService, AccountView } from '../billing/accounts.service';
import { SubscriptionStatus } from '../billing/account.entity';
import { ErrorCode, GatewayError } from '../errors';
import { microsToUsd, usdToMicros } from '../common/money';
import { monthKey } from '../common/month';
import { SubscriptionService } from '../entitlements/subscription.service';
import { ApiKey } from '../keys/api-key.entity';
import { KeyControls, KeysService } from '../keys/keys.service';
import { UsagePeriod, UsageReportService } from '../usage/usage-report.service';

export interface KeyView {
  id: string;
  name: string | null;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
  monthly_limit_usd: string | null;
  /** This UTC month's spend of the key's budget: the key's, and that of the key it was rotated from. */
  month_spend_usd: string;
  expires_at: string | null;
  models: string[] | null;
  /** The key's own requests and tokens per minute; null: the config's default (DESIGN.md 12.4). */
  rpm: number | null;
  tpm: number | null;
  /** The limits in force: its own, else the config's default for keys; null: none. */
  rate_limits: { rpm: number | null; tpm: number | null };
  /** The key this one was rotated to (the next key of its budget); null: not rotated. */
  replaced_by: string | null;
}

/** A key as created (or rotated): the full key, shown only in this answer. */
export type CreatedKeyView = { id: string; key: string } & Omit<KeyView, 'id'>;

@Injectable()
export class AdminService {
  constructor(
    private readonly accounts: AccountsService,
    private readonly subscriptions: SubscriptionService,
    private readonly keys: KeysService,
    private readonly usageService: UsageReportService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  async createAccount(name: string): Promise<AccountView> {
    const account = await this.accounts.create(name);
    return this.accounts.view(account.id);
  }

  account(id: string): Promise<AccountView> {
    return this.accounts.view(id);
  }

  async createKey(accountId: string, controls: KeyControls): Promise<CreatedKeyView> {
    await this.accounts.findOrFail(accountId);
    const { row, key } = await this.keys.create(accountId, controls);
    const [view] = await this.keyViews([row]);
    return { ...view, key };
  }

  async listKeys(accountId: string): Promise<{ object: 'list'; data: KeyView[] }> {
    await this.accounts.findOrFail(accountId);
    return { object: 'list', data: await this.keyViews(await this.keys.list(accountId)) };
  }

  async updateKey(keyId: string, controls: KeyControls): Promise<KeyView> {
    const key = await this.keys.update(keyId, controls);
    if (!key) throw new GatewayError(ErrorCode.NotFound, `No key with id ${keyId}.`);
    return (await this.keyViews([key]))[0];
  }

  async rotateKey(keyId: string, graceS: number): Promise<CreatedKeyView> {
    const created = await this.keys.rotate(keyId, graceS);
    if (!created) throw new GatewayError(ErrorCode.NotFound, `No key with id ${keyId} that is not revoked.`);
    const [view] = await this.keyViews([created.row]);
    return { ...view, key: created.key };
  }

  async revokeKey(keyId: string): Promise<KeyView> {
    const key = await this.keys.revoke(keyId);
    if (!key) throw new GatewayError(ErrorCode.NotFound, `No key with id ${keyId}.`);
    return (await this.keyViews([key]))[0];
  }

  private async keyViews(keys: ApiKey[]): Promise<KeyView[]> {
    const budgets = [...new Set(keys.map((k) => k.budgetId))];
    const [spend, successors] = await Promise.all([this.keys.monthSpend(budgets, monthKey()), this.keys.successors(budgets)]);
    const defaults = this.config.rate_limits.keys;
    return keys.map((key) => ({
      ...keyView(key, spend.get(key.budgetId) ?? 0n),
      rate_limits: { rpm: key.rpm ?? defaults?.rpm ?? null, tpm: key.tpm ?? defaults?.tpm ?? null },
      replaced_by: successors.get(key.id) ?? null,
    }));
  }

  /** Changes the account's own rate limits; every replica reads its keys again, so they apply within the notice's delay. */
  async updateAccount(accountId: string, limits: { rpm?: number | null; tpm?: number | null; lowCreditsMicros?: bigint | null }): Promise<AccountView> {
    await this.accounts.setRateLimits(accountId, limits);
    await this.keys.forgetAccount(accountId);
    return this.accounts.view(accountId);
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

function keyView(key: ApiKey, monthSpendMicros: bigint): Omit<KeyView, 'rate_limits' | 'replaced_by'> {
  return {
    id: key.id,
    name: key.name,
    prefix: key.displayPrefix,
    created_at: key.createdAt.toISOString(),
    revoked_at: key.revokedAt?.toISOString() ?? null,
    monthly_limit_usd: key.monthlyLimitMicros === null ? null : microsToUsd(key.monthlyLimitMicros),
    month_spend_usd: microsToUsd(monthSpendMicros),
    expires_at: key.expiresAt?.toISOString() ?? null,
    models: key.models,
    rpm: key.rpm,
    tpm: key.tpm,
  };
}
