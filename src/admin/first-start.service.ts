import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AdminTokenService, UNSHOWN_ADMIN_TOKEN } from '../admin-token/admin-token.service';
import { AccountsService } from '../billing/accounts.service';
import { SubscriptionService } from '../entitlements/subscription.service';
import { KeysService } from '../keys/keys.service';

const DEMO_CREDITS_MICROS = 5_000_000n;
/** The demo account's id and key in clear, kept from the key's own transaction until a start that listens has shown them. */
const UNSHOWN_DEMO = 'unshown_demo';

/** The credentials made on the first start, shown once: by the first start that got as far as listening. */
export interface FirstStartSecrets {
  adminToken: string | null;
  demo: { accountId: string; key: string } | null;
}

/**
 * The first start of an empty database: a demo account with $5.00 of credits and an active trial.
 *
 * What is shown once (the demo key, the generated admin token) is kept in clear in `settings` from the
 * statement that creates it until `showUnshown` has shown it, so a start that fails in between (the port
 * taken, the process killed) loses nothing: the next start that listens shows it, and only that one.
 */
@Injectable()
export class FirstStartService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly accounts: AccountsService,
    private readonly subscriptions: SubscriptionService,
    private readonly keys: KeysService,
    private readonly adminToken: AdminTokenService,
  ) {}

  /** Creates the demo account when this database never had one seeded and has no accounts. */
  async seedIfEmpty(): Promise<void> {
    const claimed: unknown[] = await this.db.query(
      `INSERT INTO settings (key, value) VALUES ('demo_seeded', now()::text) ON CONFLICT (key) DO NOTHING RETURNING key`,
    );
    if (claimed.length === 0) return;
    const [{ count }] = await this.db.query(`SELECT COUNT(*)::int AS count FROM accounts`);
    if (count > 0) return;
    const account = await this.accounts.create('demo');
    await this.accounts.topUp(account.id, DEMO_CREDITS_MICROS);
    await this.subscriptions.set(account.id, 'trial', null);
    await this.keys.create(account.id, { name: 'demo' }, (tx, key) =>
      tx.query(`INSERT INTO settings (key, value) VALUES ($1, $2)`, [UNSHOWN_DEMO, JSON.stringify({ accountId: account.id, key })]),
    );
  }

  /**
   * Hands what was never shown to `show` and forgets it once `show` has returned, in one transaction: of
   * replicas starting together, one shows it (the others wait on the rows, then find nothing); should the
   * commit fail, it is shown again at the next start rather than lost. The generated admin token waits
   * while ADMIN_TOKEN is set, since it is not the one in use.
   */
  async showUnshown(show: (secrets: FirstStartSecrets) => Promise<void>): Promise<void> {
    const names = this.adminToken.generated ? [UNSHOWN_ADMIN_TOKEN, UNSHOWN_DEMO] : [UNSHOWN_DEMO];
    await this.db.transaction(async (tx) => {
      // TypeORM answers a DELETE with [rows, affectedCount].
      const [rows]: [Array<{ key: string; value: string }>, number] = await tx.query(`DELETE FROM settings WHERE key = ANY($1) RETURNING key, value`, [names]);
      const value = (name: string) => rows.find((row) => row.key === name)?.value ?? null;
      const demo = value(UNSHOWN_DEMO);
      await show({ adminToken: value(UNSHOWN_ADMIN_TOKEN), demo: demo === null ? null : (JSON.parse(demo) as FirstStartSecrets['demo']) });
    });
  }
}
