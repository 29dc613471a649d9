import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { costMicros, moneyOf, PricedModel, postChat, sdk, waitForUsageRows, withFakeProvider } from './support/chat-support';
import { FakeUpstream, startFakeUpstream } from './support/fake-upstream';
import { startTestApp, TestApp, testDatabaseUrl } from './support/test-app';

const MODEL: PricedModel = { id: 'settle-failure-chat', input: 2, output: 100, maxOutput: 4096 };
const hi = [{ role: 'user' as const, content: 'hi' }];

/**
 * A settlement that fails for a reason other than an unreachable database (here: PostgreSQL itself
 * refuses the ledger entry, through a trigger) leaves the request uncharged, and its budget lease is not
 * used again: whether such a statement committed is not known for sure, so neither is the lease row's size
 * (docs/billing.md). The lease goes back once its running requests are done.
 */
describe('a settlement that fails', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;

  beforeAll(async () => {
    fake = await startFakeUpstream();
    gw = await startTestApp({
      config: (raw) => {
        withFakeProvider(fake.url, [MODEL])(raw);
        // Idle leases stay, so that the test sees which lease each request went to.
        raw.billing.lease_idle_ms = 60_000;
      },
    });
    admin = new AdminClient(gw.url);
    db = gw.app.get(DataSource);
  });

  let closed = false;
  afterAll(async () => {
    if (!closed) {
      await db.query(`DROP FUNCTION IF EXISTS refuse_ledger_for_test() CASCADE`);
      await gw?.close();
    }
    await fake?.close();
  });

  const leaseRows = async (accountId: string): Promise<string[]> =>
    (await db.query(`SELECT request_id FROM holds WHERE account_id = $1 ORDER BY created_at`, [accountId])).map(
      (r: { request_id: string }) => r.request_id,
    );

  it('leaves the request uncharged and puts no new request into its lease; the money stays consistent', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.reply = { content: 'one two three four five six', promptTokens: 10, completionTokens: 6 };

    // A slow stream keeps the lease in use for the whole test.
    fake.slowChunkDelayMs = 400;
    fake.failNext('slowChunks');
    const slow = await postChat(gw, key, { model: MODEL.id, messages: hi, stream: true, max_tokens: 50 });
    expect(slow.status).toBe(200);
    const slowBody = slow.text();
    const [lease] = await leaseRows(accountId);
    expect(lease).toMatch(/^lease:/);

    await db.query(`
      CREATE FUNCTION refuse_ledger_for_test() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.account_id = '${accountId}' AND NEW.kind = 'charge' THEN RAISE EXCEPTION 'ledger refused by the test'; END IF;
        RETURN NEW;
      END $$`);
    await db.query(`CREATE TRIGGER refuse_ledger_for_test BEFORE INSERT ON ledger_entries FOR EACH ROW EXECUTE FUNCTION refuse_ledger_for_test()`);
    const failed = await postChat(gw, key, { model: MODEL.id, messages: hi, max_tokens: 50 });
    expect(failed.status).toBe(200);
    const failedId = failed.headers.get('x-request-id')!;
    // Its settlement failed: its usage record is written uncharged by the response's close.
    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ request_id: failedId, status: 200, cost_micros: '0' })]);
    await db.query(`DROP FUNCTION refuse_ledger_for_test() CASCADE`);

    const next = await sdk(gw, key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 50 });
    expect(next.usage?.completion_tokens).toBe(6);
    // The next request went into a new lease, while the first one still holds the slow stream.
    const leases = await leaseRows(accountId);
    expect(leases).toHaveLength(2);
    expect(leases[0]).toBe(lease);

    expect(await slowBody).toContain('[DONE]');
    // Stopping gives the remaining lease back; the money is then read on a connection of the test's own.
    await gw.close();
    closed = true;
    const check = await new DataSource({ type: 'postgres', url: testDatabaseUrl() }).initialize();
    const money = await moneyOf(check, accountId).finally(() => check.destroy());
    const charged = costMicros(MODEL, 10, 6);
    expect(money.charges.map((c) => c.amount)).toEqual([charged, charged]);
    expect(money.charges.map((c) => c.requestId)).not.toContain(failedId);
    expect(money).toMatchObject({ reserved: 0n, openHolds: 0, balance: 10_000_000n - 2n * charged, ledgerSum: 10_000_000n - 2n * charged });
  });
});
