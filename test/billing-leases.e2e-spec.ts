import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { HoldSweeper } from '../src/billing/hold-sweeper.service';
import { monthKey } from '../src/common/month';
import { validateGatewayConfig } from '../src/config/gateway-config.loader';
import { PROVIDER_TYPES } from '../src/providers/provider-types';
import { AdminClient } from './support/admin-client';
import { costMicros, parseSseData, postChat, PricedModel, withFakeProvider } from './support/chat-support';
import { FakeUpstream, startFakeUpstream } from './support/fake-upstream';
import { OwnPostgres, startOwnPostgres } from './support/own-postgres';
import { defaultRawConfig, startTestApp, TestApp } from './support/test-app';

// 2 and 100 micro-USD per token: a request with max_tokens 1000 holds about 0.1 USD.
const MODEL: PricedModel = { id: 'leased-chat', input: 2, output: 100, maxOutput: 4096 };
const hi = [{ role: 'user' as const, content: 'hi' }];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Two replicas of the gateway on the run's database, configured alike. The upstream's silence
 * bound (request_ms) is long: a stream the test keeps open must not end on its own.
 */
async function twoReplicas(fake: FakeUpstream, billing: Record<string, number> = {}): Promise<[TestApp, TestApp]> {
  const config = (raw: Record<string, any>) => {
    withFakeProvider(fake.url, [MODEL], { requestMs: 120_000 })(raw);
    raw.billing = { ...raw.billing, ...billing };
  };
  // One after the other: two migration runs at once on a new database would collide.
  const one = await startTestApp({ config });
  return [one, await startTestApp({ config })];
}

interface AccountMoney {
  balance: bigint;
  reserved: bigint;
  held: bigint;
  spend: bigint;
  /** Sums over the rows the figures above must equal. */
  holds: bigint;
  monthHolds: bigint;
  ledger: bigint;
  charges: bigint;
  leaseRows: number;
}

async function moneyOf(db: DataSource, accountId: string): Promise<AccountMoney> {
  const [row] = await db.query(
    `SELECT a.balance_micros, a.reserved_micros, COALESCE(c.held_micros, 0) AS held, COALESCE(c.spend_micros, 0) AS spend,
            (SELECT COALESCE(sum(amount_micros), 0) FROM holds h WHERE h.account_id = a.id) AS holds,
            (SELECT COALESCE(sum(amount_micros), 0) FROM holds h WHERE h.account_id = a.id AND h.month = $2) AS month_holds,
            (SELECT count(*) FROM holds h WHERE h.account_id = a.id AND h.request_id LIKE 'lease:%') AS lease_rows,
            (SELECT COALESCE(sum(amount_micros), 0) FROM ledger_entries l WHERE l.account_id = a.id) AS ledger,
            (SELECT COALESCE(-sum(amount_micros), 0) FROM ledger_entries l WHERE l.account_id = a.id AND l.kind = 'charge') AS charges
       FROM accounts a LEFT JOIN monthly_counters c ON c.account_id = a.id AND c.month = $2 WHERE a.id = $1`,
    [accountId, monthKey()],
  );
  return {
    balance: BigInt(row.balance_micros),
    reserved: BigInt(row.reserved_micros),
    held: BigInt(row.held),
    spend: BigInt(row.spend),
    holds: BigInt(row.holds),
    monthHolds: BigInt(row.month_holds),
    ledger: BigInt(row.ledger),
    charges: BigInt(row.charges),
    leaseRows: Number(row.lease_rows),
  };
}

/** reserved = the sum of its holds, held = this month's, balance = the ledger's sum, spend = the charges. */
function expectInvariants(money: AccountMoney): void {
  expect(money.reserved).toBe(money.holds);
  expect(money.held).toBe(money.monthHolds);
  expect(money.balance).toBe(money.ledger);
  expect(money.spend).toBe(money.charges);
  expect(money.balance).toBeGreaterThanOrEqual(money.reserved);
}

async function usageCount(db: DataSource, accountId: string): Promise<number> {
  const [{ n }] = await db.query(`SELECT count(*)::int AS n FROM usage_records WHERE account_id = $1`, [accountId]);
  return n;
}

async function waitUntil(predicate: () => Promise<boolean>, timeoutMs: number, stepMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(stepMs);
  }
}

/** A streamed chat request whose body is read in the background; abort() plays the client going away. */
function openStream(gw: TestApp, key: string, maxTokens: number) {
  const controller = new AbortController();
  const body = postChat(gw, key, { model: MODEL.id, messages: hi, max_tokens: maxTokens, stream: true }, { signal: controller.signal }).then(
    (res) => res.text().then((text) => ({ status: res.status, text })),
  );
  // An aborted read is the expected end of a stream the test gave up on.
  body.catch(() => undefined);
  return { body, abort: () => controller.abort() };
}

/**
 * "Kills" a replica as far as the database can tell: it takes no more requests and its heartbeat
 * stops, while its lease stays reserved and its running request stays open. (The multi-process
 * fault suite does the real kill -9.)
 */
async function stopReplica(gw: TestApp): Promise<void> {
  await gw.app.get(HoldSweeper).stop();
  gw.app.getHttpServer().close();
}

describe('budget leases of a dead replica, default settings', () => {
  let fake: FakeUpstream, one: TestApp, two: TestApp, admin: AdminClient, db: DataSource;
  beforeAll(async () => {
    fake = await startFakeUpstream();
    [one, two] = await twoReplicas(fake);
    admin = new AdminClient(two.url);
    db = two.app.get(DataSource);
  });
  afterAll(async () => {
    await Promise.all([one?.close(), two?.close()]);
    await fake?.close();
  });

  it('come back to the account within 15 s (lease_ttl_s 10 + hold_sweep_interval_s 2), uncharged, and another replica can spend them', async () => {
    expect(two.config.billing).toMatchObject({ lease_ttl_s: 10, hold_sweep_interval_s: 2 });
    const { accountId, key } = await admin.createAccount({ creditsUsd: '0.15' });
    // The upstream never answers: the request stays in flight, its worst case placed in replica one's lease.
    fake.failNext('hang');
    const stream = openStream(one, key, 1000);
    await waitUntil(async () => (await moneyOf(db, accountId)).leaseRows === 1 && fake.requests.length === 1, 5000, 20);
    const leased = await moneyOf(db, accountId);
    expect(leased.reserved).toBeGreaterThan(100_000n); // the request's worst case: most of the 0.15 USD

    // While replica one's lease holds it, the money is not there for replica two.
    const refused = await postChat(two, key, { model: MODEL.id, messages: hi, max_tokens: 1000 });
    expect(refused.status).toBe(402);

    await stopReplica(one);
    const stoppedAt = Date.now();
    await waitUntil(async () => (await moneyOf(db, accountId)).reserved === 0n, 20_000);
    const backAfterMs = Date.now() - stoppedAt;
    // Not before the lease's lifetime (its last renewal was at most one interval before the stop)…
    expect(backAfterMs).toBeGreaterThanOrEqual(10_000 - 2_000 - 500);
    // …and within the documented bound.
    expect(backAfterMs).toBeLessThanOrEqual(15_000);

    const swept = await moneyOf(db, accountId);
    expectInvariants(swept);
    expect(swept).toMatchObject({ balance: 150_000n, reserved: 0n, held: 0n, charges: 0n, leaseRows: 0 });

    const served = await postChat(two, key, { model: MODEL.id, messages: hi, max_tokens: 1000 });
    expect(served.status).toBe(200);

    // The "dead" replica's request ends after all (an in-process replica cannot truly die): whatever
    // it settles goes through the swept lease's path, and the account stays consistent.
    stream.abort();
    // Its usage record joins those of the 402 and the 200 on replica two.
    await waitUntil(async () => (await usageCount(db, accountId)) === 3, 5000);
    expectInvariants(await moneyOf(db, accountId));
  }, 60_000);
});

describe('budget leases with a short lifetime (lease_ttl_s 3, hold_sweep_interval_s 1)', () => {
  let fake: FakeUpstream, one: TestApp, two: TestApp, admin: AdminClient, db: DataSource;
  beforeAll(async () => {
    fake = await startFakeUpstream();
    [one, two] = await twoReplicas(fake, { lease_ttl_s: 3, hold_sweep_interval_s: 1 });
    admin = new AdminClient(two.url);
    db = two.app.get(DataSource);
    // Replicas sweep only once they have reached the database for a whole lease lifetime.
    await sleep(3_000);
  });
  beforeEach(() => fake.resetState());
  afterAll(async () => {
    await Promise.all([one?.close(), two?.close()]);
    await fake?.close();
  });

  it('keep the lease of a request that streams for longer than the lifetime, and charge it exactly', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply = { content: 'one two three four five six', promptTokens: 40, completionTokens: 6 };
    fake.chunkDelayMs = 1000; // 9 events, 8 pauses: about 8 s, well past 3 s + 1 s
    const startedAt = Date.now();
    const stream = openStream(one, key, 1000);

    let samples = 0;
    while (!(await Promise.race([stream.body.then(() => true), sleep(500).then(() => false)]))) {
      // Replica two's sweeper runs on its own timer; one more pass now, to be sure it had every chance.
      await two.app.get(HoldSweeper).tick();
      const money = await moneyOf(db, accountId);
      if (fake.requests.length === 1) {
        expect(money.leaseRows).toBe(1);
        expect(money.reserved).toBeGreaterThan(100_000n); // the request's worst case, max_tokens 1000
        expectInvariants(money);
        samples++;
      }
    }
    const elapsedMs = Date.now() - startedAt;
    expect(elapsedMs).toBeGreaterThan(3_000 + 1_000 + 2_000);
    expect(samples).toBeGreaterThan(8);

    const { status, text } = await stream.body;
    expect(status).toBe(200);
    const data = parseSseData(text);
    expect(data.at(-1)).toBe('[DONE]');
    const content = data
      .slice(0, -1)
      .map((d) => JSON.parse(d).choices?.[0]?.delta?.content ?? '')
      .join('');
    expect(content).toBe('one two three four five six');

    const cost = costMicros(MODEL, 40, 6);
    // Settled, and the idle lease given back.
    await waitUntil(async () => (await moneyOf(db, accountId)).leaseRows === 0, 5000);
    const money = await moneyOf(db, accountId);
    expectInvariants(money);
    expect(money).toMatchObject({ balance: 1_000_000n - cost, charges: cost, spend: cost, leaseRows: 0 });
    const usage = await db.query(`SELECT status, cost_micros FROM usage_records WHERE account_id = $1`, [accountId]);
    expect(usage).toEqual([{ status: 200, cost_micros: String(cost) }]);
  }, 30_000);

  it('return a stopped replica\'s lease within lease_ttl_s + hold_sweep_interval_s', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '0.15' });
    fake.failNext('hang');
    const stream = openStream(one, key, 1000);
    await waitUntil(async () => (await moneyOf(db, accountId)).leaseRows === 1 && fake.requests.length === 1, 5000, 20);
    await stopReplica(one);
    const stoppedAt = Date.now();
    await waitUntil(async () => (await moneyOf(db, accountId)).reserved === 0n, 10_000, 50);
    expect(Date.now() - stoppedAt).toBeLessThanOrEqual(3_000 + 1_000 + 500);
    const money = await moneyOf(db, accountId);
    expectInvariants(money);
    expect(money).toMatchObject({ balance: 150_000n, charges: 0n, leaseRows: 0 });
    stream.abort();
    await waitUntil(async () => (await usageCount(db, accountId)) === 1, 5000);
    expectInvariants(await moneyOf(db, accountId));
  }, 30_000);
});

describe('billing_sweep_holds after PostgreSQL starts', () => {
  let gw: TestApp;
  beforeAll(async () => {
    // Its own sweeper waits a lease lifetime before sweeping: it stays out of the way.
    gw = await startTestApp({ config: (raw) => (raw.billing = { ...raw.billing, lease_ttl_s: 3600 }) });
  });
  afterAll(() => gw?.close());

  it('sweeps nothing until the server has been up for the grace the sweeper passes (a lease lifetime)', async () => {
    const db = gw.app.get(DataSource);
    const { accountId } = await new AdminClient(gw.url).createAccount({ creditsUsd: '1' });
    await db.transaction(async (m) => {
      await m.query(`INSERT INTO holds (account_id, request_id, amount_micros, month, expires_at)
                     VALUES ($1, 'lease:expired-before-restart', 5000, $2, now() - interval '1 minute')`, [accountId, monthKey()]);
      await m.query(`UPDATE accounts SET reserved_micros = reserved_micros + 5000 WHERE id = $1`, [accountId]);
      await m.query(`INSERT INTO monthly_counters (account_id, month, held_micros) VALUES ($1, $2, 5000)
                     ON CONFLICT (account_id, month) DO UPDATE SET held_micros = monthly_counters.held_micros + 5000`, [accountId, monthKey()]);
    });
    const [{ uptime_ms }] = await db.query(`SELECT (extract(epoch FROM now() - pg_postmaster_start_time()) * 1000)::integer AS uptime_ms`);
    // As if the server had started just now: a grace longer than its uptime.
    expect(await db.query(`SELECT billing_sweep_holds(1000, $1) AS n`, [uptime_ms + 60_000])).toEqual([{ n: 0 }]);
    expect((await moneyOf(db, accountId)).reserved).toBe(5000n);
    expect(await db.query(`SELECT billing_sweep_holds(1000, 1) AS n`)).toEqual([{ n: 1 }]);
    const money = await moneyOf(db, accountId);
    expectInvariants(money);
    expect(money).toMatchObject({ reserved: 0n, held: 0n, balance: 1_000_000n });
  });
});

describe('budget leases across a PostgreSQL restart (own server, lease_ttl_s 3, hold_sweep_interval_s 1)', () => {
  let pg: OwnPostgres, fake: FakeUpstream, one: TestApp, two: TestApp, admin: AdminClient;
  // A connection of the test's own, opened again after the restart.
  let probe: Client | undefined;
  const query = async (text: string, values: unknown[] = []) => {
    if (!probe) {
      probe = new Client({ connectionString: pg.url });
      probe.on('error', () => (probe = undefined));
      await probe.connect();
    }
    return (await probe.query(text, values)).rows;
  };

  beforeAll(async () => {
    pg = await startOwnPostgres();
    fake = await startFakeUpstream();
    const config = (raw: Record<string, any>) => {
      withFakeProvider(fake.url, [MODEL], { requestMs: 120_000 })(raw);
      raw.billing = { ...raw.billing, lease_ttl_s: 3, hold_sweep_interval_s: 1 };
    };
    // One after the other, as in twoReplicas.
    one = await startTestApp({ config, env: { databaseUrl: pg.url } });
    two = await startTestApp({ config, env: { databaseUrl: pg.url } });
    admin = new AdminClient(two.url);
    await sleep(3_000);
  }, 60_000);
  afterAll(async () => {
    await probe?.end().catch(() => undefined);
    await Promise.all([one?.close(), two?.close()]);
    await fake?.close();
    await pg?.destroy();
  });

  it("sweeps no live replica's lease after the restart, and the request running through it is charged exactly", async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const words = Array.from({ length: 14 }, (_, i) => `w${i}`);
    fake.reply = { content: words.join(' '), promptTokens: 40, completionTokens: words.length };
    fake.chunkDelayMs = 1000; // about 16 s of streaming, the outage in the middle of it
    const stream = openStream(one, key, 1000);
    const leaseOf = () => query(`SELECT request_id, expires_at > now() AS live FROM holds WHERE account_id = $1`, [accountId]);
    await waitUntil(async () => (await leaseOf()).length === 1 && fake.requests.length === 1, 5000, 20);
    const [{ request_id: lease }] = await leaseOf();

    await probe?.end().catch(() => undefined);
    probe = undefined;
    await pg.stop();
    await sleep(5_000); // longer than the lease lifetime: the row has expired when the server comes back
    await pg.start();
    const restartedAt = Date.now();

    // Both replicas pass every second; give replica two's sweeper more chances than the lifetime.
    while (Date.now() - restartedAt < 6_000) {
      await two.app.get(HoldSweeper).tick();
      expect((await leaseOf()).map((h) => h.request_id)).toEqual([lease]);
      await sleep(200);
    }
    expect(await leaseOf()).toEqual([{ request_id: lease, live: true }]);

    const { status, text } = await stream.body;
    expect(status).toBe(200);
    expect(parseSseData(text).at(-1)).toBe('[DONE]');
    const cost = costMicros(MODEL, 40, words.length);
    await waitUntil(async () => (await leaseOf()).length === 0, 5000);
    const [money] = await query(
      `SELECT a.balance_micros, a.reserved_micros, (SELECT COALESCE(sum(amount_micros), 0) FROM ledger_entries l WHERE l.account_id = a.id) AS ledger
         FROM accounts a WHERE a.id = $1`,
      [accountId],
    );
    expect(money).toEqual({ balance_micros: String(1_000_000n - cost), reserved_micros: '0', ledger: String(1_000_000n - cost) });
  }, 60_000);
});

describe('billing.lease_ttl_s and hold_sweep_interval_s', () => {
  const withBilling = (billing: Record<string, unknown>) => ({ ...defaultRawConfig(), billing });

  it('default to a 10 s lifetime renewed every 2 s', () => {
    expect(validateGatewayConfig(withBilling({}), PROVIDER_TYPES).billing).toMatchObject({ lease_ttl_s: 10, hold_sweep_interval_s: 2 });
  });

  it('refuse an interval that is not well below the lifetime, naming the field', () => {
    expect(() => validateGatewayConfig(withBilling({ lease_ttl_s: 10, hold_sweep_interval_s: 5 }), PROVIDER_TYPES)).toThrow(
      /billing\.hold_sweep_interval_s: must be less than half of billing\.lease_ttl_s \(10\) \(got 5\)/,
    );
    expect(() => validateGatewayConfig(withBilling({ hold_sweep_margin_s: 60 }), PROVIDER_TYPES)).toThrow(/billing\.hold_sweep_margin_s: unknown key/);
    expect(validateGatewayConfig(withBilling({ lease_ttl_s: 30, hold_sweep_interval_s: 14 }), PROVIDER_TYPES).billing.hold_sweep_interval_s).toBe(14);
  });
});
