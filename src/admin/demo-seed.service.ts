import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AccountsService } from '../billing/accounts.service';
import { SubscriptionService } from '../entitlements/subscription.service';
import { KeysService } from '../keys/keys.service';

const DEMO_CREDITS_MICROS = 5_000_000n;

/** First start of an empty database: a demo account with $5.00 of credits and an active trial. */
@Injectable()
export class DemoSeedService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly accounts: AccountsService,
    private readonly subscriptions: SubscriptionService,
    private readonly keys: KeysService,
  ) {}

  /** Returns the demo key when this call created the account, null when the database already had accounts. */
  async seedIfEmpty(): Promise<{ accountId: string; key: string } | null> {
    const claimed: unknown[] = await this.db.query(
      `INSERT INTO settings (key, value) VALUES ('demo_seeded', now()::text) ON CONFLICT (key) DO NOTHING RETURNING key`,
    );
    if (claimed.length === 0) return null;
    const [{ count }] = await this.db.query(`SELECT COUNT(*)::int AS count FROM accounts`);
    if (count > 0) return null;
    const account = await this.accounts.create('demo');
    await this.accounts.topUp(account.id, DEMO_CREDITS_MICROS);
    await this.subscriptions.set(account.id, 'trial', null);
    const { key } = await this.keys.create(account.id, { name: 'demo' });
    return { accountId: account.id, key };
  }
}
