import { Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { AdminClient } from './support/admin-client';
import { costMicros, postChat, PricedModel, withFakeProvider } from './support/chat-support';
import { FakeUpstream, startFakeUpstream } from './support/fake-upstream';
import { OwnPostgres, startOwnPostgres } from './support/own-postgres';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

/**
 * The gateway against a PostgreSQL of this suite's own, which it terminates, stops, kills and
 * restarts for real (issue 13, docs/operations.md "Faults").
 */
const MODEL: PricedModel = { id: 'db-fault-chat', input: 2, output: 100, maxOutput: 4096 };
const hi = { model: MODEL.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 };
// What the fake upstream reports for each answer, and so what each 200 costs.
const PROMPT_TOKENS = 10;
const COMPLETION_TOKENS = 20;
const COST = costMicros(MODEL, PROMPT_TOKENS, COMPLETION_TOKENS);

describe('database faults', () => {
  let pg: OwnPostgres;
  let fake: FakeUpstream;
  let gw: TestApp;
  let admin: AdminClient;
  /** The test's own view of the database, apart from the gateway's connections. */
  let observer: Pool;

  beforeAll(async () => {
    pg = await startOwnPostgres();
    observer = new Pool({ connectionString: pg.url, max: 2 });
    observer.on('error', () => undefined);
    fake = await startFakeUpstream();
    gw = await startTestApp({ env: { databaseUrl: pg.url }, config: withFakeProvider(fake.url, [MODEL]) });
    admin = new AdminClient(gw.url);
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
    await observer?.end();
    await pg?.destroy();
  });
  beforeEach(() => {
    fake.resetState();
    fake.reply = { content: 'ok', promptTokens: PROMPT_TOKENS, completionTokens: COMPLETION_TOKENS };
  });

  it('survives pg_terminate_backend of every gateway connection: the next chat request is 200 and charged', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    expect((await postChat(gw, key, hi)).status).toBe(200);
    await waitFor(async () => (await chargesOf(accountId)).length === 1);

    const { rows } = await observer.query<{ terminated: boolean }>(
      `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
    );
    // The billing pool's idle connection, TypeORM's and the revocation listener at least.
    expect(rows.length).toBeGreaterThanOrEqual(3);
    // Their 'error' events arrive now; one without a listener would end this process.
    await sleep(300);

    const res = await postChat(gw, key, hi);
    expect(res.status).toBe(200);
    await waitFor(async () => (await chargesOf(accountId)).length === 2);
    const charges = await chargesOf(accountId);
    expect(charges.map((c) => c.amount)).toEqual([COST, COST]);
    expect(charges[1].requestId).toBe(res.headers.get('x-request-id'));
    await expectMoneyInvariants();
    // The revocation listener was terminated too: it listens again a second later and then forgets every cached
    // key. Back before the next case caches its key, or a slow machine would see that key forgotten mid-case.
    await waitFor(async () => {
      const { rows } = await observer.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`,
      );
      return rows[0].n > 0;
    }, 15_000);
    await sleep(100);
  });

  it('answers 503 service_unavailable within 2 s while PostgreSQL is stopped, keeps serving what needs no database, and recovers within 5 s of its restart', async () => {
    const cached = await admin.createAccount({ creditsUsd: '1' });
    const uncached = await admin.createAccount({ creditsUsd: '1' });
    // Authenticates the key once, so it is in the auth cache.
    expect((await models(cached.key)).status).toBe(200);
    // The lease of that request's account is given back once idle (100 ms in tests): the next chat request needs the database.
    expect((await postChat(gw, cached.key, hi)).status).toBe(200);
    await waitFor(async () => (await chargesOf(cached.accountId)).length === 1);
    const balanceBefore = await balanceOf(cached.accountId);
    // Usage records of authenticated requests answered during the outage: written once it is over.
    const recordedLater: string[] = [];

    await pg.stop();
    try {
      for (const [what, key] of [
        ['uncached key', uncached.key],
        ['cached key, needing a hold', cached.key],
      ]) {
        const started = Date.now();
        const res = await postChat(gw, key, hi);
        const elapsed = Date.now() - started;
        expect({ what, status: res.status }).toEqual({ what, status: 503 });
        expect(elapsed).toBeLessThan(2000);
        expect(res.headers.get('retry-after')).toBe('1');
        if (key === cached.key) recordedLater.push(res.headers.get('x-request-id')!);
        expect(await res.json()).toEqual({
          error: { message: expect.any(String), type: 'api_error', param: null, code: 'service_unavailable' },
        });
      }
      const ready = await fetch(`${gw.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as ErrorBody).error.code).toBe('service_unavailable');
      expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
      const modelsDuringOutage = await models(cached.key);
      expect(modelsDuringOutage.status).toBe(200);
      recordedLater.push(modelsDuringOutage.headers.get('x-request-id')!);
      expect(fake.requests).toHaveLength(1);
    } finally {
      await pg.start();
    }

    const restartedAt = Date.now();
    for (;;) {
      const [chat, ready] = await Promise.all([postChat(gw, cached.key, hi), fetch(`${gw.url}/readyz`)]);
      if (chat.status === 200 && ready.status === 200) break;
      expect(Date.now() - restartedAt).toBeLessThan(5000);
      await sleep(100);
    }
    expect((await postChat(gw, uncached.key, hi)).status).toBe(200);
    // Nothing was charged for the 503s: the two 200s before and after the outage only.
    await waitFor(async () => (await chargesOf(cached.accountId)).length === 2);
    expect(await balanceOf(cached.accountId)).toBe(balanceBefore - COST);
    await waitFor(async () => (await metric('gateway_pending_writes')) === 0, 5000);
    const { rows: late } = await observer.query<{ request_id: string; status: number; cost_micros: string; error_code: string | null }>(
      `SELECT request_id, status, cost_micros, error_code FROM usage_records WHERE request_id = ANY($1::text[]) ORDER BY id`,
      [recordedLater],
    );
    expect(late.map((r) => [r.request_id, r.status, r.cost_micros, r.error_code]).sort()).toEqual(
      [
        [recordedLater[0], 503, '0', 'service_unavailable'],
        [recordedLater[1], 200, '0', null],
      ].sort(),
    );
    await expectMoneyInvariants();
  });

  it('answers 503 within 2 s while PostgreSQL is frozen (SIGSTOP: connections open but no answer), and recovers when it resumes', async () => {
    const cached = await admin.createAccount({ creditsUsd: '1' });
    const uncached = await admin.createAccount({ creditsUsd: '1' });
    expect((await postChat(gw, cached.key, hi)).status).toBe(200);
    await waitFor(async () => (await chargesOf(cached.accountId)).length === 1);
    await sleep(200);

    const frozen = pg.pids();
    for (const pid of frozen) process.kill(pid, 'SIGSTOP');
    try {
      const started = Date.now();
      const responses = await Promise.all([postChat(gw, uncached.key, hi), postChat(gw, cached.key, hi), fetch(`${gw.url}/readyz`)]);
      expect(Date.now() - started).toBeLessThan(2000);
      expect(responses.map((r) => r.status)).toEqual([503, 503, 503]);
      expect(responses.map((r) => r.headers.get('retry-after'))).toEqual(['1', '1', '1']);
    } finally {
      for (const pid of frozen) process.kill(pid, 'SIGCONT');
    }
    const resumedAt = Date.now();
    while ((await postChat(gw, uncached.key, hi)).status !== 200) {
      expect(Date.now() - resumedAt).toBeLessThan(5000);
      await sleep(100);
    }
    await waitFor(async () => (await metric('gateway_pending_writes')) === 0);
    expect(await chargesOf(cached.accountId)).toHaveLength(1);
    await expectMoneyInvariants();
  });

  it.each([
    ['stopped', () => pg.stop()],
    ['killed with SIGKILL', () => pg.kill9()],
  ])('charges and records exactly once, after recovery, responses delivered while PostgreSQL was %s', async (_how, takeDown) => {
    await waitFor(async () => (await metric('gateway_pending_writes')) === 0);
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const streamed = { ...hi, stream: true, stream_options: { include_usage: true } };
    // The holds are placed while the database is up; the answers come once it is down.
    fake.responseDelayMs = 700;
    const inFlight = [postChat(gw, key, hi), postChat(gw, key, streamed), postChat(gw, key, hi)];
    await waitFor(async () => fake.requests.length === 3);
    await takeDown();
    let requestIds: string[];
    try {
      const responses = await Promise.all(inFlight);
      expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
      await Promise.all(responses.map((r) => r.text()));
      requestIds = responses.map((r) => r.headers.get('x-request-id')!);
      // Settlements fail within the pool timeouts and wait in memory, visible in the metrics.
      await waitFor(async () => (await metric('gateway_pending_writes')) === 3, 5000);
    } finally {
      await pg.start();
    }
    await waitFor(async () => (await metric('gateway_pending_writes')) === 0, 5000);

    const charges = await chargesOf(accountId);
    expect(charges.map((c) => c.requestId).sort()).toEqual([...requestIds].sort());
    expect(charges.map((c) => c.amount)).toEqual([COST, COST, COST]);
    const { rows: usage } = await observer.query<{ request_id: string; status: number; cost_micros: string }>(
      `SELECT request_id, status, cost_micros FROM usage_records WHERE account_id = $1`,
      [accountId],
    );
    expect(usage.map((u) => u.request_id).sort()).toEqual([...requestIds].sort());
    expect(usage.every((u) => u.status === 200 && BigInt(u.cost_micros) === COST)).toBe(true);
    expect(await balanceOf(accountId)).toBe(1_000_000n - 3n * COST);
    expect(await metric('gateway_pending_writes_lost_total')).toBe(0);
    await expectMoneyInvariants();
  });

  it('logs every still unwritten request id and amount when it must stop before the database is back', async () => {
    const other = await startTestApp({ env: { databaseUrl: pg.url }, config: withFakeProvider(fake.url, [MODEL]) });
    const errors = jest.spyOn(Logger.prototype, 'error');
    try {
      const { key } = await new AdminClient(other.url).createAccount({ creditsUsd: '1' });
      fake.responseDelayMs = 500;
      const pending = postChat(other, key, hi);
      await waitFor(async () => fake.requests.length === 1);
      await pg.stop();
      const res = await pending;
      expect(res.status).toBe(200);
      const requestId = res.headers.get('x-request-id')!;

      const started = Date.now();
      await other.close();
      // 5 s of retries, then the log line; the pool timeouts bound the last attempt.
      expect(Date.now() - started).toBeLessThan(9000);
      const lines = errors.mock.calls.map((call) => String(call[1] ?? call[0]));
      const lost = lines.filter((l) => l.includes('Unwritten settlement') && l.includes(requestId));
      expect(lost).toHaveLength(1);
      expect(lost[0]).toContain(`$0.${COST.toString().padStart(6, '0')}`);
    } finally {
      errors.mockRestore();
      await pg.start();
    }
  });

  async function models(key: string): Promise<Response> {
    return fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  }

  async function chargesOf(accountId: string): Promise<{ requestId: string; amount: bigint }[]> {
    const { rows } = await observer.query<{ request_id: string; amount_micros: string }>(
      `SELECT request_id, amount_micros FROM ledger_entries WHERE account_id = $1 AND kind = 'charge' ORDER BY id`,
      [accountId],
    );
    return rows.map((r) => ({ requestId: r.request_id, amount: -BigInt(r.amount_micros) }));
  }

  async function balanceOf(accountId: string): Promise<bigint> {
    const { rows } = await observer.query<{ balance_micros: string }>(`SELECT balance_micros FROM accounts WHERE id = $1`, [accountId]);
    return BigInt(rows[0].balance_micros);
  }

  /** Over every account: balance = sum of its ledger, reserved = sum of its open holds, month spend = sum of its charges. */
  async function expectMoneyInvariants(): Promise<void> {
    const { rows } = await observer.query(
      `SELECT a.id,
              a.balance_micros = COALESCE((SELECT sum(amount_micros) FROM ledger_entries l WHERE l.account_id = a.id), 0) AS balance_ok,
              a.reserved_micros = COALESCE((SELECT sum(amount_micros) FROM holds h WHERE h.account_id = a.id), 0) AS reserved_ok,
              COALESCE((SELECT sum(spend_micros) FROM monthly_counters c WHERE c.account_id = a.id), 0)
                = COALESCE((SELECT -sum(amount_micros) FROM ledger_entries l WHERE l.account_id = a.id AND l.kind = 'charge'), 0) AS spend_ok,
              a.balance_micros >= 0 AS solvent
         FROM accounts a`,
    );
    const broken = rows.filter((r) => !(r.balance_ok && r.reserved_ok && r.spend_ok && r.solvent));
    expect(broken).toEqual([]);
  }

  async function metric(name: string): Promise<number> {
    const text = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } })).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    if (!line) throw new Error(`No ${name} in /metrics`);
    return Number(line.split(' ')[1]);
  }
});

interface ErrorBody {
  error: { code: string };
}

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await sleep(25);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
