import { DataSource } from 'typeorm';
import { monthKey } from '../src/common/month';
import { usdToMicros } from '../src/common/money';
import { AdminClient } from './support/admin-client';
import { classCostMicros, costMicros, holdMicros, moneyOf, PricedModel, sdk, usageRowsOf, usd, waitForUsageRows, useFakeGateway, withFakeProvider } from './support/chat-support';
import { FakeReply, FakeUpstream, startFakeUpstream } from './support/fake-upstream';
import { startTestApp, TestApp } from './support/test-app';

// 2 and 100 micro-USD per token: the output dominates, so what a request costs is easy to bound.
const PRICED: PricedModel = { id: 'billed-chat', input: 2, output: 100, maxOutput: 4096 };
// Free input: the capped allowance does not depend on how the gateway bounds the prompt.
const OUTPUT_ONLY: PricedModel = { id: 'output-only-chat', input: 0, output: 10, maxOutput: 4096 };
// Fractional prices, where the charge must be rounded (docs/billing.md: once, up).
const FRACTIONAL: PricedModel = { id: 'fractional-chat', input: 1.25, output: 10, maxOutput: 4096 };
// Every token class priced on its own (issue 23): the hold takes the dearest class prices (4 and 120).
const CLASSED: PricedModel = { id: 'classed-billed-chat', input: 2, cachedInput: 1, cacheWrite: 2.5, audioInput: 4, output: 100, audioOutput: 120, maxOutput: 4096 };
const MODELS = [PRICED, OUTPUT_ONLY, FRACTIONAL, CLASSED];

const hi = [{ role: 'user' as const, content: 'hi' }];

/** A model, the answer its upstream gives to each request, and what that answer costs. */
interface Priced {
  model: PricedModel;
  reply: FakeReply;
  perRequest: bigint;
}

const PLAIN_PRICES: Priced = { model: PRICED, reply: { content: 'ok', promptTokens: 10, completionTokens: 100 }, perRequest: costMicros(PRICED, 10, 100) };
// 4 plain + 6 cached + 2 audio prompt tokens, 100 audio output tokens: 4×2 + 6×1 + 2×4 + 100×120 = 12,022 micro-USD,
// against a hold of 35 × 4 + 100 × 120 = 12,140.
const CLASS_PRICES: Priced = {
  model: CLASSED,
  reply: { content: 'ok', promptTokens: 12, completionTokens: 100, usageDetails: { prompt: { cached_tokens: 6, audio_tokens: 2 }, completion: { audio_tokens: 100 } } },
  perRequest: classCostMicros(CLASSED, { prompt: 12, completion: 100, cached: 6, audioIn: 2, audioOut: 100 }),
};
const PRICINGS: [string, Priced][] = [
  ['plain prices', PLAIN_PRICES],
  ['cached and audio prices', CLASS_PRICES],
];

describe('chat billing', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useFakeGateway(MODELS);
  beforeAll(() => ({ fake, gw, admin, db } = suite));
  beforeEach(() => {
    fake.resetState();
    fake.reply = { content: 'ok', promptTokens: 10, completionTokens: 100 };
  });

  it('charges prompt × input price + completion × output price to the micro-dollar, with one ledger entry and one usage record', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply = { content: 'Something.', promptTokens: 1234, completionTokens: 567 };
    const completion = await sdk(gw, key).chat.completions.create({
      model: PRICED.id,
      messages: [{ role: 'user', content: 'Tell me something.' }],
      max_tokens: 1000,
    });
    expect(completion.usage).toMatchObject({ prompt_tokens: 1234, completion_tokens: 567 });

    const cost = 1234n * 2n + 567n * 100n; // 2468 + 56700 = 59168
    expect(costMicros(PRICED, 1234, 567)).toBe(cost);
    const money = await moneyOf(db, accountId);
    expect(money).toMatchObject({ balance: 1_000_000n - cost, reserved: 0n, ledgerSum: 1_000_000n - cost, openHolds: 0 });
    expect(money.charges).toHaveLength(1);
    expect(money.charges[0].amount).toBe(cost);

    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([
      expect.objectContaining({ model: PRICED.id, status: 200, error_code: null, prompt_tokens: 1234, completion_tokens: 567, cost_micros: String(cost) }),
    ]);
    expect(rows[0].request_id).toBe(money.charges[0].requestId);

    const usage = await admin.usage(accountId);
    expect(usage.totals).toMatchObject({ requests: 1, prompt_tokens: 1234, completion_tokens: 567 });
    expect(usage.latest[0]).toMatchObject({ model: PRICED.id, status: 200, cost_usd: '0.059168' });

    const account = await admin.account(accountId);
    expect(usdToMicros(account.credits_usd)).toBe(1_000_000n - cost);
    expect(usdToMicros(account.month_spend_usd)).toBe(cost);
  });

  it('counts the tokens itself when the upstream reports a count no usage record can hold (over 2^31 - 1)', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply = { content: 'A short answer.', promptTokens: 3_000_000_000, completionTokens: 4 };
    const completion = await sdk(gw, key).chat.completions.create({ model: PRICED.id, messages: hi, max_tokens: 100 });
    expect(completion.choices[0].message.content).toBe('A short answer.');

    const [row] = await waitForUsageRows(db, accountId, 1);
    expect(row).toMatchObject({ status: 200, error_code: null });
    // The gateway's own count of "hi" with its chat framing, and of the answer.
    expect(row.prompt_tokens).toBeLessThan(20);
    expect(row.completion_tokens).toBe(4);
    const cost = costMicros(PRICED, row.prompt_tokens, row.completion_tokens);
    expect(row.cost_micros).toBe(String(cost));
    const money = await moneyOf(db, accountId);
    expect(money.charges.map((c) => c.amount)).toEqual([cost]);
    expect(money).toMatchObject({ reserved: 0n, balance: 1_000_000n - cost });
  });

  it('rounds a fractional charge up, once, to the micro-dollar', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    // 997 × 1.25 + 123 × 10 = 1246.25 + 1230 = 2476.25 micro-USD → 2477
    fake.reply = { content: 'x', promptTokens: 997, completionTokens: 123 };
    await sdk(gw, key).chat.completions.create({ model: FRACTIONAL.id, messages: hi, max_tokens: 500 });
    // 3 × 1.25 + 1 × 10 = 13.75 → 14
    fake.reply = { content: 'x', promptTokens: 3, completionTokens: 1 };
    await sdk(gw, key).chat.completions.create({ model: FRACTIONAL.id, messages: hi, max_tokens: 500 });

    const money = await moneyOf(db, accountId);
    expect(money.charges.map((c) => c.amount)).toEqual([2477n, 14n]);
    expect(money.balance).toBe(1_000_000n - 2477n - 14n);
    expect(money.ledgerSum).toBe(money.balance);
    expect((await usageRowsOf(db, accountId)).map((r) => r.cost_micros)).toEqual(['2477', '14']);
  });

  it('keeps the ledger summing to the balance and one usage record per request over a series of requests', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '0.5' });
    const client = sdk(gw, key);
    let expected = 0n;
    for (let i = 1; i <= 5; i++) {
      fake.reply = { content: 'answer', promptTokens: 10 * i, completionTokens: 7 * i };
      await client.chat.completions.create({ model: PRICED.id, messages: hi, max_tokens: 200 });
      expected += costMicros(PRICED, 10 * i, 7 * i);
    }
    const money = await moneyOf(db, accountId);
    expect(money.balance).toBe(500_000n - expected);
    expect(money.ledgerSum).toBe(money.balance);
    expect(money.charges).toHaveLength(5);
    const rows = await waitForUsageRows(db, accountId, 5);
    expect(rows).toHaveLength(5);
    expect(new Set(rows.map((r) => r.request_id)).size).toBe(5);
    expect(rows.reduce((sum, r) => sum + BigInt(r.cost_micros), 0n)).toBe(expected);
  });

  it.each(PRICINGS)('100 concurrent requests on credits for about 20 (%s): never below zero, each success charged exactly, the rest 402 with no upstream call', async (_, { model, reply, perRequest }) => {
    expect(perRequest).toBeLessThanOrEqual(holdMicros(model, hi, 100));
    const credits = perRequest * 20n;
    const { accountId, key } = await admin.createAccount({ creditsUsd: usd(credits) });
    fake.reply = reply;
    fake.responseDelayMs = 100; // every hold is taken while the first requests are still running

    const client = sdk(gw, key);
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, () => client.chat.completions.create({ model: model.id, messages: hi, max_tokens: 100 })),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    const declined = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok.length).toBeGreaterThanOrEqual(15);
    expect(ok.length).toBeLessThanOrEqual(20);
    for (const r of declined) {
      expect(r.reason.status).toBe(402);
      expect(r.reason.code).toBe('insufficient_credits');
    }
    expect(fake.requests).toHaveLength(ok.length);

    const money = await moneyOf(db, accountId);
    expect(money.balance).toBe(credits - perRequest * BigInt(ok.length));
    expect(money.balance >= 0n).toBe(true);
    expect(money).toMatchObject({ reserved: 0n, openHolds: 0, ledgerSum: money.balance });
    expect(money.charges).toHaveLength(ok.length);
    expect(money.charges.every((c) => c.amount === perRequest)).toBe(true);

    const rows = await waitForUsageRows(db, accountId, 100);
    expect(rows).toHaveLength(100);
    expect(rows.filter((r) => r.status === 402 && r.error_code === 'insufficient_credits' && r.cost_micros === '0')).toHaveLength(declined.length);
  });

  it.each(PRICINGS)('100 concurrent requests within a monthly limit for about 20 (%s): spend never above the limit, the rest 402 monthly_limit_reached', async (_, { model, reply, perRequest }) => {
    const limit = perRequest * 20n;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '100', monthlyLimitUsd: usd(limit) });
    fake.reply = reply;
    fake.responseDelayMs = 100;

    const client = sdk(gw, key);
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, () => client.chat.completions.create({ model: model.id, messages: hi, max_tokens: 100 })),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    expect(ok.length).toBeGreaterThanOrEqual(15);
    expect(ok.length).toBeLessThanOrEqual(20);
    for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) {
      expect(r.reason.status).toBe(402);
      expect(r.reason.code).toBe('monthly_limit_reached');
    }
    expect(fake.requests).toHaveLength(ok.length);
    const money = await moneyOf(db, accountId);
    const account = await admin.account(accountId);
    expect(usdToMicros(account.month_spend_usd)).toBe(perRequest * BigInt(ok.length));
    expect(usdToMicros(account.month_spend_usd)! <= limit).toBe(true);
    expect(money.balance).toBe(100_000_000n - perRequest * BigInt(ok.length));
    expect(money.ledgerSum).toBe(money.balance);
  });

  it("does not count last month's spend against this month's limit", async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1', monthlyLimitUsd: '0.1' });
    const now = new Date();
    const lastMonth = monthKey(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)));
    // Last month the whole limit was spent.
    await db.query(`INSERT INTO monthly_counters (account_id, month, spend_micros) VALUES ($1, $2, 100000)`, [accountId, lastMonth]);

    const res = await sdk(gw, key).chat.completions.create({ model: PRICED.id, messages: hi, max_tokens: 100 });
    expect(res.usage?.completion_tokens).toBe(100);
    expect(fake.requests).toHaveLength(1);
    await moneyOf(db, accountId); // settled
    expect(usdToMicros((await admin.account(accountId)).month_spend_usd)).toBe(costMicros(PRICED, 10, 100));
  });

  it('caps the output to what the credits afford when the client set no max_tokens, and sends the cap upstream', async () => {
    // 1000 micro-USD at 10 micro-USD per output token (input free): 100 tokens.
    const { accountId, key } = await admin.createAccount({ creditsUsd: '0.001' });
    fake.reply = { content: 'a long story', promptTokens: 10, completionTokens: 4000 };
    const res = await sdk(gw, key).chat.completions.create({ model: OUTPUT_ONLY.id, messages: [{ role: 'user', content: 'Write a long story.' }] });
    expect(fake.requests).toHaveLength(1);
    // In OpenAI's current field, which its reasoning models require (they refuse max_tokens).
    expect(fake.requests[0].body).toMatchObject({ max_completion_tokens: 100 });
    expect(fake.requests[0].body).not.toHaveProperty('max_tokens');
    expect(res.usage?.completion_tokens).toBe(100);
    expect(res.choices[0].finish_reason).toBe('length');
    const money = await moneyOf(db, accountId);
    expect(money).toMatchObject({ balance: 0n, reserved: 0n, ledgerSum: 0n });
  });

  it('caps the output to what the monthly limit leaves', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1', monthlyLimitUsd: '0.0005' });
    await sdk(gw, key).chat.completions.create({ model: OUTPUT_ONLY.id, messages: hi });
    expect(fake.requests[0].body.max_completion_tokens).toBe(50);
  });

  it('leaves max_tokens alone when the model maximum is affordable', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    await sdk(gw, key).chat.completions.create({ model: OUTPUT_ONLY.id, messages: hi });
    expect(fake.requests[0].body).not.toHaveProperty('max_tokens');
    expect(fake.requests[0].body).not.toHaveProperty('max_completion_tokens');
  });

  it("answers 402 insufficient_credits when the client's own max_tokens cannot be afforded, with no upstream call and nothing debited", async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '0.001' });
    const err = await sdk(gw, key)
      .chat.completions.create({ model: OUTPUT_ONLY.id, messages: hi, max_tokens: 101 })
      .catch((e) => e);
    expect(err).toMatchObject({ status: 402, code: 'insufficient_credits', type: 'insufficient_quota' });
    expect(err.message).toMatch(/at most 100 output tokens/);
    // What the request was held for, in its own field's name, and the way out that works.
    expect(err.message).toContain('held for up to 101 output tokens (its max_tokens)');
    expect(err.message).toContain('Top up credits or lower max_tokens to at most 100.');
    expect(fake.requests).toHaveLength(0);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1000n, reserved: 0n, ledgerSum: 1000n, openHolds: 0, charges: [] });

    // One token fewer fits exactly, and is what the upstream receives.
    await sdk(gw, key).chat.completions.create({ model: OUTPUT_ONLY.id, messages: hi, max_tokens: 100 });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].body.max_tokens).toBe(100);
  });

  it("answers 402 monthly_limit_reached when the client's max_completion_tokens exceeds what the limit leaves", async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1', monthlyLimitUsd: '0.0005' });
    const err = await sdk(gw, key)
      .chat.completions.create({ model: OUTPUT_ONLY.id, messages: hi, max_completion_tokens: 51 })
      .catch((e) => e);
    expect(err).toMatchObject({ status: 402, code: 'monthly_limit_reached' });
    expect(err.message).toMatch(/Monthly spending limit reached: this request is held for up to 51 output tokens \(its max_completion_tokens\)/);
    expect(err.message).toContain('Raise the limit or lower max_completion_tokens to at most 50.');
    expect(fake.requests).toHaveLength(0);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, reserved: 0n, charges: [] });
  });

  it('answers 402 monthly_limit_reached for an account at its limit, and insufficient_credits for an empty one', async () => {
    const limited = await admin.createAccount({ creditsUsd: '1', monthlyLimitUsd: '0' });
    const err = await sdk(gw, limited.key)
      .chat.completions.create({ model: PRICED.id, messages: hi })
      .catch((e) => e);
    expect(err).toMatchObject({ status: 402, code: 'monthly_limit_reached' });
    const empty = await admin.createAccount();
    const err2 = await sdk(gw, empty.key)
      .chat.completions.create({ model: PRICED.id, messages: hi })
      .catch((e) => e);
    expect(err2).toMatchObject({ status: 402, code: 'insufficient_credits' });
    expect(fake.requests).toHaveLength(0);
    const rows = await waitForUsageRows(db, empty.accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ status: 402, error_code: 'insufficient_credits', cost_micros: '0', model: PRICED.id })]);
  });
});

describe('chat billing across two app instances on one database', () => {
  let fake: FakeUpstream;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    fake = await startFakeUpstream();
    [a, b] = await Promise.all([startTestApp({ config: withFakeProvider(fake.url, MODELS) }), startTestApp({ config: withFakeProvider(fake.url, MODELS) })]);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await fake.close();
  });

  /** 100 concurrent chats of one key, alternating between the replicas: how many succeeded, and the others' errors. */
  async function hundredAcrossReplicas(key: string, model: PricedModel) {
    fake.responseDelayMs = 100;
    const clients = [sdk(a, key), sdk(b, key)];
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) => clients[i % 2].chat.completions.create({ model: model.id, messages: hi, max_tokens: 100 })),
    );
    return {
      ok: results.filter((r) => r.status === 'fulfilled').length,
      reasons: results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason),
    };
  }

  it.each(PRICINGS)('never overspends the credits when both replicas serve the same account at once (%s)', async (_, { model, reply, perRequest }) => {
    fake.resetState();
    fake.reply = reply;
    const credits = perRequest * 20n;
    const { accountId, key } = await new AdminClient(a.url).createAccount({ creditsUsd: usd(credits) });
    const { ok, reasons } = await hundredAcrossReplicas(key, model);
    expect(ok).toBeGreaterThanOrEqual(15);
    expect(ok).toBeLessThanOrEqual(20);
    expect(reasons.every((e) => e.status === 402 && e.code === 'insufficient_credits')).toBe(true);
    expect(fake.requests).toHaveLength(ok);

    const money = await moneyOf(a.app.get(DataSource), accountId);
    expect(money.balance).toBe(credits - perRequest * BigInt(ok));
    expect(money).toMatchObject({ reserved: 0n, openHolds: 0, ledgerSum: money.balance });
  });

  it.each(PRICINGS)('never overspends the monthly limit when both replicas serve the same account at once (%s)', async (_, { model, reply, perRequest }) => {
    fake.resetState();
    fake.reply = reply;
    const limit = perRequest * 20n;
    const { accountId, key } = await new AdminClient(b.url).createAccount({ creditsUsd: '100', monthlyLimitUsd: usd(limit) });
    const { ok, reasons } = await hundredAcrossReplicas(key, model);
    expect(ok).toBeGreaterThanOrEqual(15);
    expect(ok).toBeLessThanOrEqual(20);
    expect(reasons.every((e) => e.status === 402 && e.code === 'monthly_limit_reached')).toBe(true);
    expect(fake.requests).toHaveLength(ok);
    expect(await moneyOf(a.app.get(DataSource), accountId)).toMatchObject({ reserved: 0n, openHolds: 0 });
    const account = await new AdminClient(a.url).account(accountId);
    expect(usdToMicros(account.month_spend_usd)).toBe(perRequest * BigInt(ok));
  });
});
