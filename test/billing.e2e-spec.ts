import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { BillingService, Reservation } from '../src/billing/billing.service';
import { HoldSweeper } from '../src/billing/hold-sweeper.service';
import { monthKey } from '../src/common/month';
import { CatalogEntry } from '../src/config/gateway-config.schema';
import { requestCost } from '../src/billing/request-cost';
import { NO_TOKENS, TokenUsage, UsageRecordValues } from '../src/usage/usage-record';
import { AdminClient } from './support/admin-client';
import { RawConfig, startTestApp, TestApp } from './support/test-app';

// $1.25 / $10 per million tokens: 1.25 and 10 micro-USD per token.
const MODEL = {
  id: 'billing-test-model',
  kind: 'chat',
  provider: 'local',
  upstream_model: 'dev-echo',
  input_price_per_million: 1.25,
  output_price_per_million: 10,
  max_output_tokens: 1000,
};

function addModel(raw: RawConfig): void {
  raw.catalog.push(MODEL);
}

/** The plain tokens a test request used. */
type Tokens = Pick<TokenUsage, 'promptTokens' | 'completionTokens'>;

/** A request's usage record as its meter hands it to the settlement, which writes it with the charge. */
function usageRecord(reservation: Reservation, keyId: string, usage: TokenUsage): UsageRecordValues {
  return {
    request_id: reservation.requestId,
    account_id: reservation.accountId,
    key_id: keyId,
    model: MODEL.id,
    endpoint: '/v1/chat/completions',
    status: 200,
    error_code: null,
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    cached_tokens: usage.cachedTokens,
    cache_write_tokens: usage.cacheWriteTokens,
    cache_write_1h_tokens: usage.cacheWrite1hTokens,
    reasoning_tokens: usage.reasoningTokens,
    audio_input_tokens: usage.audioInputTokens,
    audio_output_tokens: usage.audioOutputTokens,
    audio_seconds: '0.000',
    input_chars: 0,
    latency_ms: 0,
    streamed: false,
  };
}

/** As the chat service settles: the request's cost from its usage block (requestCost), and its record. */
function settle(billing: BillingService, reservation: Reservation, keyId: string, tokens: Tokens, linger = false): Promise<bigint> {
  const model = { id: MODEL.id, input_price_per_million: MODEL.input_price_per_million, output_price_per_million: MODEL.output_price_per_million } as CatalogEntry;
  const cost = requestCost({ prompt_tokens: tokens.promptTokens, completion_tokens: tokens.completionTokens }, model)!;
  return billing.settle(reservation, cost.micros, usageRecord(reservation, keyId, { ...NO_TOKENS, ...tokens }), linger);
}

/** As the usage meter settles after the response: nobody awaits it (the shutdown must). */
function settleAfterResponse(billing: BillingService, reservation: Reservation, keyId: string, usage: Tokens): void {
  settle(billing, reservation, keyId, usage, true).catch(() => undefined);
}

describe('BillingService against PostgreSQL', () => {
  let gw: TestApp;
  let admin: AdminClient;
  let billing: BillingService;
  let db: DataSource;
  let model: CatalogEntry;

  beforeAll(async () => {
    gw = await startTestApp({ config: addModel });
    admin = new AdminClient(gw.url);
    billing = gw.app.get(BillingService);
    db = gw.app.get(DataSource);
    model = gw.config.catalog.find((m) => m.id === MODEL.id)!;
  });
  afterAll(() => gw.close());

  async function money(accountId: string) {
    const [account] = await db.query(`SELECT balance_micros, reserved_micros FROM accounts WHERE id = $1`, [accountId]);
    const [ledger] = await db.query(`SELECT COALESCE(SUM(amount_micros), 0) AS sum FROM ledger_entries WHERE account_id = $1`, [accountId]);
    const [counter] = await db.query(`SELECT spend_micros, held_micros FROM monthly_counters WHERE account_id = $1 AND month = $2`, [
      accountId,
      monthKey(),
    ]);
    const [holds] = await db.query(`SELECT COUNT(*)::int AS n FROM holds WHERE account_id = $1`, [accountId]);
    return {
      balance: BigInt(account.balance_micros),
      reserved: BigInt(account.reserved_micros),
      ledgerSum: BigInt(ledger.sum),
      spend: BigInt(counter?.spend_micros ?? 0),
      held: BigInt(counter?.held_micros ?? 0),
      holds: holds.n as number,
    };
  }

  /** The money once this process has given the account's idle budget lease back (billing.lease_idle_ms). */
  async function moneyAtRest(accountId: string) {
    await waitFor(async () => (await money(accountId)).holds === 0, 5000);
    return money(accountId);
  }

  function reserve(accountId: string, promptTokens: number, requestedMaxTokens: number | null, requestId = `req_${randomUUID()}`) {
    return billing.reserve({ accountId, requestId, model, promptTokens, requestedMaxTokens });
  }

  it('holds the worst case, then charges prompt × input + completion × output exactly, with ledger entry and usage record', async () => {
    const { accountId, keyId } = await admin.createAccount({ creditsUsd: '1' });
    const requestId = `req_${randomUUID()}`;
    const reservation = await billing.reserve({ accountId, requestId, model, promptTokens: 1000, requestedMaxTokens: 200 });
    // 1000 × 1.25 + 200 × 10 = 3250 micro-USD; the account could afford 100 more such holds, so the
    // budget lease takes 8 holds of spare room besides: one hold row, reserved like any hold.
    expect(reservation).toMatchObject({ holdMicros: 3250n, outputAllowance: 200, capped: false });
    expect(await money(accountId)).toMatchObject({ balance: 1_000_000n, reserved: 9n * 3250n, held: 9n * 3250n, holds: 1 });

    // 997 × 1.25 = 1246.25, + 123 × 10 = 2476.25 → 2477 micro-USD (rounded up, once)
    const cost = await settle(billing, reservation, keyId, { promptTokens: 997, completionTokens: 123 });
    expect(cost).toBe(2477n);
    const after = await moneyAtRest(accountId);
    expect(after).toMatchObject({ balance: 1_000_000n - 2477n, reserved: 0n, held: 0n, spend: 2477n, holds: 0 });
    expect(after.ledgerSum).toBe(after.balance);

    const ledger = await db.query(`SELECT kind, amount_micros, balance_after_micros, request_id FROM ledger_entries WHERE account_id = $1 AND kind = 'charge'`, [
      accountId,
    ]);
    expect(ledger).toEqual([{ kind: 'charge', amount_micros: '-2477', balance_after_micros: String(1_000_000 - 2477), request_id: requestId }]);
    const usage = await db.query(`SELECT status, prompt_tokens, completion_tokens, cost_micros, model FROM usage_records WHERE request_id = $1`, [requestId]);
    expect(usage).toEqual([{ status: 200, prompt_tokens: 997, completion_tokens: 123, cost_micros: '2477', model: MODEL.id }]);
  });

  it('rounds up, holds and charges alike: 2 prompt tokens at 1.25 = 2.5 → 3 micro-USD; 1 token = 1.25 → 2', async () => {
    const { accountId, keyId } = await admin.createAccount({ creditsUsd: '1' });
    const r1 = await reserve(accountId, 2, 0);
    expect(r1.holdMicros).toBe(3n);
    expect(await settle(billing, r1, keyId, { promptTokens: 2, completionTokens: 0 })).toBe(3n);
    const r2 = await reserve(accountId, 1, 0);
    expect(r2.holdMicros).toBe(2n);
    expect(await settle(billing, r2, keyId, { promptTokens: 1, completionTokens: 0 })).toBe(2n);
    expect((await money(accountId)).balance).toBe(1_000_000n - 5n);
  });

  it('never charges more than the hold, even when the upstream overran the allowance', async () => {
    const { accountId, keyId } = await admin.createAccount({ creditsUsd: '1' });
    const reservation = await reserve(accountId, 100, 10); // 125 + 100 = 225
    const cost = await settle(billing, reservation, keyId, { promptTokens: 100, completionTokens: 50 });
    expect(cost).toBe(225n);
    expect((await money(accountId)).balance).toBe(1_000_000n - 225n);
  });

  it('caps the output allowance to what the credits afford when the client set no max_tokens', async () => {
    // $0.001 = 1000 micro-USD; 100 prompt tokens = 125 → 875 left → 87 output tokens (+0.5 rounding slack).
    const { accountId } = await admin.createAccount({ creditsUsd: '0.001' });
    const reservation = await reserve(accountId, 100, null);
    expect(reservation).toMatchObject({ outputAllowance: 87, capped: true, holdMicros: 995n });
    // Near its limits the lease takes no spare room.
    expect(await money(accountId)).toMatchObject({ reserved: 995n, held: 995n, holds: 1 });
    await billing.release(reservation);
    expect(await moneyAtRest(accountId)).toMatchObject({ reserved: 0n, held: 0n, balance: 1000n, holds: 0 });
  });

  it('uses the model maximum, uncapped, when it is affordable', async () => {
    const { accountId } = await admin.createAccount({ creditsUsd: '1' });
    const reservation = await reserve(accountId, 10, null);
    expect(reservation).toMatchObject({ outputAllowance: 1000, capped: false, holdMicros: 10_013n });
    await billing.release(reservation);
  });

  it('caps to the monthly limit when it binds before the credits', async () => {
    const { accountId } = await admin.createAccount({ creditsUsd: '1', monthlyLimitUsd: '0.0005' });
    const reservation = await reserve(accountId, 100, null); // 500 − 125 = 375 → 37 tokens
    expect(reservation).toMatchObject({ outputAllowance: 37, capped: true, holdMicros: 495n });
    await billing.release(reservation);
  });

  it('declines an unaffordable max_tokens with 402 insufficient_credits, saying what is affordable, and changes nothing', async () => {
    const { accountId } = await admin.createAccount({ creditsUsd: '0.001' });
    const err = await reserve(accountId, 100, 500).catch((e) => e);
    expect(err).toMatchObject({ code: 'insufficient_credits', status: 402 });
    expect(err.message).toMatch(/the balance of \$0\.001000 covers/);
    expect(err.message).toMatch(/at most 87 output tokens/);
    expect(await money(accountId)).toMatchObject({ balance: 1000n, reserved: 0n, held: 0n, holds: 0 });
  });

  it('declines with monthly_limit_reached when the spending limit is the binding constraint', async () => {
    const { accountId } = await admin.createAccount({ creditsUsd: '1', monthlyLimitUsd: '0.0005' });
    const err = await reserve(accountId, 100, 500).catch((e) => e);
    expect(err).toMatchObject({ code: 'monthly_limit_reached', status: 402 });
    expect(err.message).toMatch(/\$0\.000500 of this month's \$0\.000500 spending limit remains/);
    expect(err.message).toMatch(/at most 37 output tokens/);
  });

  it('declines an absurd max_tokens with 402, not a database error', async () => {
    const { accountId } = await admin.createAccount({ creditsUsd: '1000' });
    await expect(reserve(accountId, 10, 1e12)).rejects.toMatchObject({ code: 'insufficient_credits', status: 402 });
  });

  it('declines an empty balance and a prompt that alone is not affordable', async () => {
    const empty = await admin.createAccount();
    await expect(reserve(empty.accountId, 1, null)).rejects.toMatchObject({ code: 'insufficient_credits' });
    const small = await admin.createAccount({ creditsUsd: '0.0001' }); // 100 micro-USD < 100 prompt tokens × 1.25
    const err = await reserve(small.accountId, 100, null).catch((e) => e);
    expect(err).toMatchObject({ code: 'insufficient_credits' });
    expect(err.message).toMatch(/does not cover this prompt with even 1 output token/);
  });

  it('does not count last month\'s spend against this month\'s limit', async () => {
    const { accountId } = await admin.createAccount({ creditsUsd: '1', monthlyLimitUsd: '0.01' });
    const now = new Date();
    const lastMonth = monthKey(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 15)));
    await db.query(`INSERT INTO monthly_counters (account_id, month, spend_micros) VALUES ($1, $2, 10000)`, [accountId, lastMonth]);
    const reservation = await reserve(accountId, 100, 100);
    expect(reservation.holdMicros).toBe(1125n);
    await billing.release(reservation);

    await db.query(`UPDATE monthly_counters SET spend_micros = 10000 WHERE account_id = $1 AND month = $2`, [accountId, monthKey()]);
    await expect(reserve(accountId, 100, 100)).rejects.toMatchObject({ code: 'monthly_limit_reached' });
  });

  it('is idempotent: a second settle or release neither charges nor releases again', async () => {
    const { accountId, keyId } = await admin.createAccount({ creditsUsd: '1' });
    const requestId = `req_${randomUUID()}`;
    const reservation = await billing.reserve({ accountId, requestId, model, promptTokens: 100, requestedMaxTokens: 100 });
    const other = await reserve(accountId, 100, 100); // keeps the lease in use
    expect(other.lease).toBe(reservation.lease);
    expect(await settle(billing, reservation, keyId, { promptTokens: 100, completionTokens: 10 })).toBe(225n);
    expect(await settle(billing, reservation, keyId, { promptTokens: 100, completionTokens: 10 })).toBe(0n);
    await billing.release(reservation);
    // Only the other request's hold is still in use: a second release would have freed it twice.
    expect(reservation.lease.used).toBe(other.holdMicros);
    const state = await money(accountId);
    // The lease (9 holds) gave the charge to the balance and kept the rest for the next requests.
    expect(state).toMatchObject({ balance: 1_000_000n - 225n, reserved: 9n * 1125n - 225n, spend: 225n, holds: 1 });
    expect(state.ledgerSum).toBe(state.balance);
    await billing.release(other);
    await billing.release(other);
    expect(reservation.lease.used).toBe(0n);
    expect(await moneyAtRest(accountId)).toMatchObject({ balance: 1_000_000n - 225n, reserved: 0n, held: 0n, spend: 225n });
  });

  it('settles concurrent requests of several accounts in one batch exactly, a repeated settle among them charging nothing', async () => {
    const a = await admin.createAccount({ creditsUsd: '1' });
    const b = await admin.createAccount({ creditsUsd: '1' });
    // Concurrent calls share one database call; each hold is 100 × 1.25 + 100 × 10 = 1125.
    const held = await Promise.all([a, b, a, b, a, b, a].map((acct) => reserve(acct.accountId, 100, 100)));
    const keyOf = (r: Reservation) => (r.accountId === a.accountId ? a.keyId : b.keyId);
    expect(held.every((r) => r.holdMicros === 1125n)).toBe(true);
    const [first, ...rest] = held;
    expect(await settle(billing, first, keyOf(first), { promptTokens: 100, completionTokens: 10 })).toBe(225n);

    // completion i × 7 tokens: 125 + 70·i micro-USD each; the repeated settle of `first` is in the same batch.
    const charges = await Promise.all([
      ...rest.map((r, i) => settle(billing, r, keyOf(r), { promptTokens: 100, completionTokens: 7 * i })),
      settle(billing, first, keyOf(first), { promptTokens: 100, completionTokens: 10 }),
    ]);
    expect(charges).toEqual([...rest.map((_, i) => 125n + 70n * BigInt(i)), 0n]);

    for (const acct of [a, b]) {
      const own = [first, ...rest].map((r, i) => ({ r, charge: i === 0 ? 225n : charges[i - 1] })).filter(({ r }) => r.accountId === acct.accountId);
      const spent = own.reduce((sum, { charge }) => sum + charge, 0n);
      const state = await moneyAtRest(acct.accountId);
      expect(state).toMatchObject({ balance: 1_000_000n - spent, reserved: 0n, held: 0n, spend: spent, holds: 0 });
      expect(state.ledgerSum).toBe(state.balance);
      // Every ledger entry's balance_after follows from the one before it.
      const ledger: { amount_micros: string; balance_after_micros: string }[] = await db.query(
        `SELECT amount_micros, balance_after_micros FROM ledger_entries WHERE account_id = $1 ORDER BY id`,
        [acct.accountId],
      );
      let balance = 0n;
      for (const entry of ledger) {
        balance += BigInt(entry.amount_micros);
        expect(BigInt(entry.balance_after_micros)).toBe(balance);
      }
      expect(ledger).toHaveLength(own.length + 1);
    }
  });

  it('never lets 100 concurrent reservations hold more than the balance', async () => {
    // Each request holds 100 × 1.25 + 100 × 10 = 1125 micro-USD; $0.0225 covers exactly 20.
    const { accountId, keyId } = await admin.createAccount({ creditsUsd: '0.0225' });
    const results = await Promise.allSettled(Array.from({ length: 100 }, () => reserve(accountId, 100, 100)));
    const held = results.filter((r): r is PromiseFulfilledResult<Reservation> => r.status === 'fulfilled').map((r) => r.value);
    const declined = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(held).toHaveLength(20);
    expect(declined.every((r) => r.reason.code === 'insufficient_credits')).toBe(true);
    // All of it in this process's one lease.
    expect(await money(accountId)).toMatchObject({ reserved: 22_500n, held: 22_500n, holds: 1 });

    await Promise.all(held.map((r) => settle(billing, r, keyId, { promptTokens: 100, completionTokens: 100 })));
    const state = await moneyAtRest(accountId);
    expect(state).toMatchObject({ balance: 0n, reserved: 0n, held: 0n, spend: 22_500n, holds: 0 });
    expect(state.ledgerSum).toBe(0n);
  });

  it('commits settlements started after the response before the app shuts down', async () => {
    const other = await startTestApp({ config: addModel });
    const otherBilling = other.app.get(BillingService);
    const { accountId, keyId } = await admin.createAccount({ creditsUsd: '1' });
    const pending = await Promise.all(
      Array.from({ length: 5 }, () => otherBilling.reserve({ accountId, requestId: `req_${randomUUID()}`, model, promptTokens: 100, requestedMaxTokens: 100 })),
    );
    // The account row stays locked while the app is asked to stop, so the settlements are still pending then.
    const locker = db.createQueryRunner();
    await locker.connect();
    await locker.startTransaction();
    await locker.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [accountId]);
    // 125 + 10 × 10 = 225 each; nobody awaits these settlements, the shutdown must.
    for (const r of pending) settleAfterResponse(otherBilling, r, keyId, { promptTokens: 100, completionTokens: 10 });
    const closing = other.close();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await locker.commitTransaction();
    await locker.release();
    await closing;
    const state = await money(accountId);
    expect(state).toMatchObject({ balance: 1_000_000n - 5n * 225n, reserved: 0n, held: 0n, spend: 5n * 225n, holds: 0 });
    expect(state.ledgerSum).toBe(state.balance);
  });

  it('places a request that fits in the budget lease without growing it, and grows it for one that does not', async () => {
    const { accountId } = await admin.createAccount({ creditsUsd: '1000' });
    const first = await reserve(accountId, 100, 100); // 1125, plus 8 × 1125 spare
    expect(await money(accountId)).toMatchObject({ reserved: 9n * 1125n, holds: 1 });
    const placed = await Promise.all(Array.from({ length: 8 }, () => reserve(accountId, 100, 100)));
    expect(placed.every((r) => r.lease === first.lease && r.holdMicros === 1125n)).toBe(true);
    expect(await money(accountId)).toMatchObject({ reserved: 9n * 1125n, holds: 1 });
    // The lease is full: the next one claims nothing and grows it by its hold and new spare room.
    const grown = await reserve(accountId, 100, 100);
    expect(grown.lease).toBe(first.lease);
    expect(await money(accountId)).toMatchObject({ reserved: 18n * 1125n, holds: 1 });
    await Promise.all([first, ...placed, grown].map((r) => billing.release(r)));
    expect(await moneyAtRest(accountId)).toMatchObject({ balance: 1_000_000_000n, reserved: 0n, held: 0n, holds: 0 });
  });

  it('gives the uncharged rest of a settling hold to the lease at once, while the settlement waits for company', async () => {
    const { accountId, keyId } = await admin.createAccount({ creditsUsd: '1000' });
    const first = await reserve(accountId, 100, 100); // 1125, plus 8 × 1125 spare
    const held = [first, ...(await Promise.all(Array.from({ length: 8 }, () => reserve(accountId, 100, 100))))]; // the lease, full
    expect(await money(accountId)).toMatchObject({ reserved: 9n * 1125n, holds: 1 });
    // 125 + 10 × 10 = 225 charged; the other 900 of its hold is free room in the lease before the charge commits.
    settleAfterResponse(billing, held[0], keyId, { promptTokens: 100, completionTokens: 10 });
    const next = await reserve(accountId, 100, 50); // 125 + 500 = 625
    expect(next.lease).toBe(held[0].lease);
    await waitFor(async () => (await money(accountId)).balance === 1_000_000_000n - 225n, 2000);
    expect(await money(accountId)).toMatchObject({ reserved: 9n * 1125n - 225n, spend: 225n, holds: 1 });
    await Promise.all([...held.slice(1), next].map((r) => billing.release(r)));
    const state = await moneyAtRest(accountId);
    expect(state).toMatchObject({ balance: 1_000_000_000n - 225n, reserved: 0n, held: 0n, holds: 0 });
    expect(state.ledgerSum).toBe(state.balance);
  });

  it('decides again once its own pending settlements have committed, before declining a one-at-a-time client near its limit', async () => {
    // 1,800 micro-USD: one 1,125 worst case at a time, and the account is near its limit (tight lease).
    const { accountId, keyId } = await admin.createAccount({ creditsUsd: '0.0018' });
    for (let i = 0; i < 4; i++) {
      const reservation = await reserve(accountId, 100, 100);
      // Sent right after its response; the next request asks before this charge (225) has committed.
      settleAfterResponse(billing, reservation, keyId, { promptTokens: 100, completionTokens: 10 });
    }
    await expect(reserve(accountId, 100, 100)).rejects.toMatchObject({ code: 'insufficient_credits' }); // 900 left
    const state = await moneyAtRest(accountId);
    expect(state).toMatchObject({ balance: 1800n - 4n * 225n, reserved: 0n, holds: 0 });
    expect(state.ledgerSum).toBe(state.balance);
  });

  it('asks the database again once the lease term ends, so a lowered monthly limit applies within a second', async () => {
    const { accountId } = await admin.createAccount({ creditsUsd: '1000' });
    const first = await reserve(accountId, 100, 100);
    expect((await admin.request('PUT', `/accounts/${accountId}/spending-limit`, { monthly_limit_usd: '0.001' })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await expect(reserve(accountId, 100, 100)).rejects.toMatchObject({ code: 'monthly_limit_reached' });
    await billing.release(first);
  });

  it('starts a new lease when the current one is from last month, and gives the old one back', async () => {
    const { accountId } = await admin.createAccount({ creditsUsd: '1000' });
    const first = await reserve(accountId, 100, 100);
    await billing.release(first);
    // As if the month had turned since the lease was taken: its row and its held amount belong to last month.
    const now = new Date();
    const lastMonth = monthKey(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 15)));
    await db.transaction(async (m) => {
      await m.query(`UPDATE holds SET month = $2 WHERE account_id = $1`, [accountId, lastMonth]);
      await m.query(`UPDATE monthly_counters SET held_micros = 0 WHERE account_id = $1`, [accountId]);
      await m.query(`INSERT INTO monthly_counters (account_id, month, held_micros) VALUES ($1, $2, $3)`, [accountId, lastMonth, 9 * 1125]);
    });
    const next = await reserve(accountId, 100, 100_000); // does not fit: asks the database
    expect(next.lease).not.toBe(first.lease);
    await billing.release(next);
    await moneyAtRest(accountId);
    const counters = await db.query(`SELECT month::text, held_micros FROM monthly_counters WHERE account_id = $1 ORDER BY month`, [accountId]);
    expect(counters).toEqual([
      { month: lastMonth, held_micros: '0' },
      { month: monthKey(), held_micros: '0' },
    ]);
  });

  it('never lets concurrent reservations exceed the monthly limit', async () => {
    const { accountId } = await admin.createAccount({ creditsUsd: '10', monthlyLimitUsd: '0.0225' });
    const results = await Promise.allSettled(Array.from({ length: 100 }, () => reserve(accountId, 100, 100)));
    const held = results.filter((r) => r.status === 'fulfilled');
    expect(held).toHaveLength(20);
    expect(results.filter((r) => r.status === 'rejected').every((r) => (r as PromiseRejectedResult).reason.code === 'monthly_limit_reached')).toBe(true);
    expect(await money(accountId)).toMatchObject({ held: 22_500n });
  });
});

describe('BillingService on two app instances sharing one database', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    [a, b] = await Promise.all([startTestApp({ config: addModel }), startTestApp({ config: addModel })]);
  });
  afterAll(() => Promise.all([a.close(), b.close()]));

  it("never loses credits in a replica's spare room: what a burst could not use there, that replica's next requests get", async () => {
    // 120 holds of 1125; each replica's first grow takes 8 holds of spare room (119 ≥ 100 more affordable), later ones none.
    const { accountId } = await new AdminClient(a.url).createAccount({ creditsUsd: '0.135' });
    const model = a.config.catalog.find((m) => m.id === MODEL.id)!;
    const [onA, onB] = [a.app.get(BillingService), b.app.get(BillingService)];
    const reserveOn = (service: BillingService) =>
      service.reserve({ accountId, requestId: `req_${randomUUID()}`, model, promptTokens: 100, requestedMaxTokens: 100 });
    const burst = await Promise.allSettled([...Array.from({ length: 60 }, () => reserveOn(onA)), ...Array.from({ length: 60 }, () => reserveOn(onB))]);
    let granted = burst.filter((r) => r.status === 'fulfilled').length;
    // The burst was queued before either spare room existed: at most 8 holds on each replica went unused.
    expect(granted).toBeGreaterThanOrEqual(120 - 2 * 8);
    for (const service of [onA, onB]) {
      while (await reserveOn(service).then(() => true, () => false)) granted++;
    }
    expect(granted).toBe(120);
    const [account] = await a.app.get(DataSource).query(`SELECT balance_micros, reserved_micros FROM accounts WHERE id = $1`, [accountId]);
    expect(account).toEqual({ balance_micros: '135000', reserved_micros: '135000' });
  });

  it('never holds more than the balance when both replicas reserve at once', async () => {
    const { accountId } = await new AdminClient(a.url).createAccount({ creditsUsd: '0.0225' });
    const model = a.config.catalog.find((m) => m.id === MODEL.id)!;
    const services = [a.app.get(BillingService), b.app.get(BillingService)];
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) =>
        services[i % 2].reserve({ accountId, requestId: `req_${randomUUID()}`, model, promptTokens: 100, requestedMaxTokens: 100 }),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(20);
    const [account] = await a.app.get(DataSource).query(`SELECT balance_micros, reserved_micros FROM accounts WHERE id = $1`, [accountId]);
    expect(account).toEqual({ balance_micros: '22500', reserved_micros: '22500' });
  });
});

describe('HoldSweeper', () => {
  let gw: TestApp;
  let admin: AdminClient;
  let db: DataSource;

  beforeAll(async () => {
    gw = await startTestApp({
      config: (raw) => {
        addModel(raw);
        raw.billing = { hold_sweep_interval_s: 1, lease_ttl_s: 3 };
      },
    });
    admin = new AdminClient(gw.url);
    db = gw.app.get(DataSource);
  });
  afterAll(() => gw.close());

  /** What a process that crashed after reserving leaves behind. */
  async function strandedHold(accountId: string, micros: number, expiresInS: number): Promise<string> {
    const requestId = `req_${randomUUID()}`;
    await db.transaction(async (m) => {
      await m.query(`INSERT INTO holds (account_id, request_id, amount_micros, month, expires_at)
                     VALUES ($1, $2, $3, $4, now() + $5 * interval '1 second')`, [accountId, requestId, micros, monthKey(), expiresInS]);
      await m.query(`UPDATE accounts SET reserved_micros = reserved_micros + $2 WHERE id = $1`, [accountId, micros]);
      await m.query(`INSERT INTO monthly_counters (account_id, month, held_micros) VALUES ($1, $2, $3)
                     ON CONFLICT (account_id, month) DO UPDATE SET held_micros = monthly_counters.held_micros + $3`, [accountId, monthKey(), micros]);
    });
    return requestId;
  }

  async function reserved(accountId: string) {
    const [row] = await db.query(
      `SELECT a.reserved_micros, c.held_micros FROM accounts a JOIN monthly_counters c ON c.account_id = a.id AND c.month = $2 WHERE a.id = $1`,
      [accountId, monthKey()],
    );
    return { reserved: BigInt(row.reserved_micros), held: BigInt(row.held_micros) };
  }

  it('releases an expired hold left by a dead process, and keeps the not-yet-expired one', async () => {
    const { accountId } = await admin.createAccount({ creditsUsd: '1' });
    const stale = await strandedHold(accountId, 5000, -5);
    const fresh = await strandedHold(accountId, 700, 3600);
    expect(await reserved(accountId)).toEqual({ reserved: 5700n, held: 5700n });

    await waitFor(async () => (await reserved(accountId)).reserved === 700n, 5000);
    expect(await reserved(accountId)).toEqual({ reserved: 700n, held: 700n });
    expect(await db.query(`SELECT request_id FROM holds WHERE account_id = $1`, [accountId])).toEqual([{ request_id: fresh }]);
    expect(await db.query(`SELECT 1 FROM holds WHERE request_id = $1`, [stale])).toEqual([]);
  });

  it('keeps the holds of requests still running in this process alive past their expiry', async () => {
    const { accountId, keyId } = await admin.createAccount({ creditsUsd: '1' });
    const billing = gw.app.get(BillingService);
    const model = gw.config.catalog.find((m) => m.id === MODEL.id)!;
    const requestId = `req_${randomUUID()}`;
    const reservation = await billing.reserve({ accountId, requestId, model, promptTokens: 100, requestedMaxTokens: 100 });
    // Pretend the request's lease has already outlived its time-to-live.
    await db.query(`UPDATE holds SET expires_at = now() - interval '1 second' WHERE account_id = $1`, [accountId]);
    await gw.app.get(HoldSweeper).tick();
    expect(await reserved(accountId)).toEqual({ reserved: 9n * 1125n, held: 9n * 1125n });
    expect(await settle(billing, reservation, keyId, { promptTokens: 100, completionTokens: 100 })).toBe(1125n);
    await waitFor(async () => (await reserved(accountId)).reserved === 0n, 5000);
    expect(await reserved(accountId)).toEqual({ reserved: 0n, held: 0n });
  });

  it('settling a request whose hold was swept charges only what is still free and releases nothing twice', async () => {
    const { accountId, keyId } = await admin.createAccount({ creditsUsd: '0.002' });
    const billing = gw.app.get(BillingService);
    const model = gw.config.catalog.find((m) => m.id === MODEL.id)!;
    const requestId = `req_${randomUUID()}`;
    const reservation = await billing.reserve({ accountId, requestId, model, promptTokens: 100, requestedMaxTokens: 100 });
    // Another replica's sweeper took the lease (as if this process had stalled), with the same SQL.
    await db.query(`SELECT billing_release(account_id, request_id) FROM holds WHERE account_id = $1`, [accountId]);
    await strandedHold(accountId, 1500, 3600); // someone else now holds most of the balance
    const cost = await settle(billing, reservation, keyId, { promptTokens: 100, completionTokens: 100 });
    expect(cost).toBe(500n); // 2000 − 1500 still free, not the full 1125
    const [account] = await db.query(`SELECT balance_micros, reserved_micros FROM accounts WHERE id = $1`, [accountId]);
    expect(account).toEqual({ balance_micros: '1500', reserved_micros: '1500' });
    // The next request does not trust the swept lease: it gets a new one.
    await db.query(`SELECT billing_release(account_id, request_id) FROM holds WHERE account_id = $1`, [accountId]);
    const next = await billing.reserve({ accountId, requestId: `req_${randomUUID()}`, model, promptTokens: 100, requestedMaxTokens: 100 });
    expect(next.lease).not.toBe(reservation.lease);
    expect(await db.query(`SELECT amount_micros FROM holds WHERE account_id = $1`, [accountId])).toEqual([{ amount_micros: '1125' }]);
    await billing.release(next);
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}
