import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';
import { ErrorCode, GatewayError } from '../errors';
import { microsToUsd } from '../common/money';
import { monthKey, nextMonthStart } from '../common/month';
import { Account } from './account.entity';

export interface AccountView {
  id: string;
  name: string;
  credits_usd: string;
  reserved_usd: string;
  monthly_limit_usd: string | null;
  month_spend_usd: string;
  /** The account's own requests and tokens per minute; null: the config's default (DESIGN.md 12.4). */
  rpm: number | null;
  tpm: number | null;
  /** The limits in force: its own, else the config's default; null: none. */
  rate_limits: { rpm: number | null; tpm: number | null };
  /** credits.low is sent when credits go below this (docs/operations.md, "Webhooks"); null: never. */
  low_credits_usd: string | null;
  subscription: { status: string; ends_at: string | null; trial_used: boolean };
  fair_use: { used: number; allowance: number; resets_at: string };
  created_at: string;
}

/** Accounts and their money: creation, top-ups (with their ledger entry), the spending limit. */
@Injectable()
export class AccountsService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  async create(name: string): Promise<Account> {
    return this.db.getRepository(Account).save({ name });
  }

  async findOrFail(id: string): Promise<Account> {
    const account = await this.db.getRepository(Account).findOneBy({ id });
    if (!account) throw new GatewayError(ErrorCode.NotFound, `No account with id ${id}.`);
    return account;
  }

  /**
   * Adds credits and writes the matching ledger entry in one statement, so the ledger always sums to the balance.
   * A balance back at or above the low-credits threshold re-arms credits.low (billing_raise_alerts).
   */
  async topUp(accountId: string, micros: bigint): Promise<void> {
    const rows = await this.db.query(
      `WITH updated AS (
         UPDATE accounts SET balance_micros = balance_micros + $2,
                low_credits_below = low_credits_below AND balance_micros + $2 < COALESCE(low_credits_micros, 0)
          WHERE id = $1 RETURNING id, balance_micros
       )
       INSERT INTO ledger_entries (account_id, kind, amount_micros, balance_after_micros)
       SELECT id, 'top_up', $2, balance_micros FROM updated RETURNING id`,
      [accountId, micros.toString()],
    );
    if (rows.length === 0) throw new GatewayError(ErrorCode.NotFound, `No account with id ${accountId}.`);
  }

  async setMonthlyLimit(accountId: string, micros: bigint | null): Promise<void> {
    // TypeORM answers an UPDATE with [rows, affectedCount].
    const [rows] = await this.db.query(`UPDATE accounts SET monthly_limit_micros = $2 WHERE id = $1 RETURNING id`, [
      accountId,
      micros === null ? null : micros.toString(),
    ]);
    if (rows.length === 0) throw new GatewayError(ErrorCode.NotFound, `No account with id ${accountId}.`);
  }

  /**
   * Sets the named rate limits of the account (null: back to the default) and its low-credits threshold (null: none);
   * the caller tells the replicas' key caches. A changed threshold re-arms credits.low.
   */
  async setRateLimits(accountId: string, limits: { rpm?: number | null; tpm?: number | null; lowCreditsMicros?: bigint | null }): Promise<void> {
    const sets: string[] = [];
    const values: unknown[] = [accountId];
    if (limits.rpm !== undefined) sets.push(`rpm = $${values.push(limits.rpm)}`);
    if (limits.tpm !== undefined) sets.push(`tpm = $${values.push(limits.tpm)}`);
    if (limits.lowCreditsMicros !== undefined) {
      const at = values.push(limits.lowCreditsMicros?.toString() ?? null);
      sets.push(`low_credits_micros = $${at}::bigint`, `low_credits_below = low_credits_below AND low_credits_micros IS NOT DISTINCT FROM $${at}::bigint`);
    }
    const [rows] = await this.db.query(`UPDATE accounts SET ${[...sets, 'id = id'].join(', ')} WHERE id = $1 RETURNING id`, values);
    if (rows.length === 0) throw new GatewayError(ErrorCode.NotFound, `No account with id ${accountId}.`);
  }

  async view(accountId: string, now = new Date()): Promise<AccountView> {
    const account = await this.findOrFail(accountId);
    const counters = await this.db.query(
      `SELECT spend_micros, fair_use_used FROM monthly_counters WHERE account_id = $1 AND month = $2`,
      [accountId, monthKey(now)],
    );
    const counter = counters[0] ?? { spend_micros: '0', fair_use_used: 0 };
    return {
      id: account.id,
      name: account.name,
      credits_usd: microsToUsd(account.balanceMicros),
      reserved_usd: microsToUsd(account.reservedMicros),
      monthly_limit_usd: account.monthlyLimitMicros === null ? null : microsToUsd(account.monthlyLimitMicros),
      month_spend_usd: microsToUsd(counter.spend_micros),
      rpm: account.rpm,
      tpm: account.tpm,
      rate_limits: { rpm: account.rpm ?? this.config.rate_limits.accounts?.rpm ?? null, tpm: account.tpm ?? this.config.rate_limits.accounts?.tpm ?? null },
      low_credits_usd: account.lowCreditsMicros === null ? null : microsToUsd(account.lowCreditsMicros),
      subscription: {
        status: account.subscriptionStatus,
        ends_at: account.subscriptionEndsAt?.toISOString() ?? null,
        trial_used: account.trialUsed,
      },
      fair_use: {
        used: Number(counter.fair_use_used),
        allowance: this.config.fair_use.monthly_requests,
        resets_at: nextMonthStart(now).toISOString(),
      },
      created_at: account.createdAt.toISOString(),
    };
  }
}
