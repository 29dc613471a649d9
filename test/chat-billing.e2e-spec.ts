import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { DataSource } from 'typeorm';
import { monthKey } from '../src/common/month';
import { AdminClient } from './support/admin-client';
import { RawConfig, startTestApp, TestApp } from './support/test-app';

/**
 * A minimal OpenAI-compatible upstream over real HTTP: answers every chat completion with fixed
 * usage after a delay, and records what it received.
 */
interface BillingUpstream {
  url: string;
  usage: { prompt_tokens: number; completion_tokens: number };
  delayMs: number;
  requests: Record<string, any>[];
  close(): Promise<void>;
}

async function startUpstream(): Promise<BillingUpstream> {
  const upstream: BillingUpstream = {
    url: '',
    usage: { prompt_tokens: 10, completion_tokens: 100 },
    delayMs: 0,
    requests: [],
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req));
    upstream.requests.push(body);
    await new Promise((r) => setTimeout(r, upstream.delayMs));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: `chatcmpl-${upstream.requests.length}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok', refusal: null }, finish_reason: 'stop', logprobs: null }],
        usage: { ...upstream.usage, total_tokens: upstream.usage.prompt_tokens + upstream.usage.completion_tokens },
      }),
    );
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return upstream;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

// 2 and 100 micro-USD per token: the output dominates, so what a request costs is easy to bound.
const PRICED = { id: 'billed-chat', input: 2, output: 100, maxOutput: 4096 };
// Free input: the capped allowance does not depend on how the gateway bounds the prompt.
const OUTPUT_ONLY = { id: 'output-only-chat', input: 0, output: 10, maxOutput: 4096 };

function useUpstream(upstream: BillingUpstream) {
  return (raw: RawConfig) => {
    raw.providers.billing_fake = { type: 'openai-compatible', base_url: upstream.url, timeouts: { connect_ms: 1000, request_ms: 10_000 } };
    for (const m of [PRICED, OUTPUT_ONLY]) {
      raw.catalog.push({
        id: m.id,
        kind: 'chat',
        provider: 'billing_fake',
        upstream_model: `upstream-${m.id}`,
        input_price_per_million: m.input,
        output_price_per_million: m.output,
        max_output_tokens: m.maxOutput,
      });
    }
    raw.limits.chat_burst = { requests: 10_000, window_s: 1 };
  };
}

/** The exact charge: prompt × input price + completion × output price, in micro-USD. */
function expectedCostMicros(model: typeof PRICED, usage: { prompt_tokens: number; completion_tokens: number }): bigint {
  return BigInt(usage.prompt_tokens * model.input + usage.completion_tokens * model.output);
}

function usdToMicros(usd: string): bigint {
  const [whole, fraction = ''] = usd.split('.');
  return BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0'));
}

describe('chat billing', () => {
  let upstream: BillingUpstream;
  let gw: TestApp;
  let admin: AdminClient;
  let db: DataSource;

  beforeAll(async () => {
    upstream = await startUpstream();
    gw = await startTestApp({ config: useUpstream(upstream) });
    admin = new AdminClient(gw.url);
    db = gw.app.get(DataSource);
  });
  afterAll(async () => {
    await gw.close();
    await upstream.close();
  });
  beforeEach(() => {
    upstream.requests.length = 0;
    upstream.delayMs = 0;
    upstream.usage = { prompt_tokens: 10, completion_tokens: 100 };
  });

  function client(key: string): OpenAI {
    return new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  }

  async function ledgerOf(accountId: string) {
    const rows = await db.query(`SELECT kind, amount_micros, balance_after_micros, request_id FROM ledger_entries WHERE account_id = $1 ORDER BY id`, [
      accountId,
    ]);
    const [account] = await db.query(`SELECT balance_micros, reserved_micros FROM accounts WHERE id = $1`, [accountId]);
    return {
      rows,
      sum: rows.reduce((s: bigint, r: any) => s + BigInt(r.amount_micros), 0n),
      balance: BigInt(account.balance_micros),
      reserved: BigInt(account.reserved_micros),
    };
  }

  it('charges prompt × input price + completion × output price to the micro-dollar, with one ledger entry and one usage record', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    upstream.usage = { prompt_tokens: 1234, completion_tokens: 567 };
    const completion = await client(key).chat.completions.create({
      model: PRICED.id,
      messages: [{ role: 'user', content: 'Tell me something.' }],
      max_tokens: 1000,
    });
    expect(completion.usage).toMatchObject({ prompt_tokens: 1234, completion_tokens: 567 });

    const cost = expectedCostMicros(PRICED, upstream.usage); // 2468 + 56700 = 59168
    const ledger = await ledgerOf(accountId);
    expect(ledger.balance).toBe(1_000_000n - cost);
    expect(ledger.reserved).toBe(0n);
    expect(ledger.sum).toBe(ledger.balance);
    expect(ledger.rows.filter((r: any) => r.kind === 'charge')).toEqual([
      expect.objectContaining({ amount_micros: String(-cost), balance_after_micros: String(1_000_000n - cost) }),
    ]);

    const usage = await admin.usage(accountId);
    expect(usage.totals).toMatchObject({ requests: 1, prompt_tokens: 1234, completion_tokens: 567 });
    expect(usage.latest).toHaveLength(1);
    expect(usage.latest[0]).toMatchObject({ model: PRICED.id, status: 200, cost_usd: '0.059168' });
    expect(usage.latest[0].request_id).toBe(ledger.rows.find((r: any) => r.kind === 'charge').request_id);

    const account = await admin.account(accountId);
    expect(usdToMicros(account.credits_usd)).toBe(1_000_000n - cost);
    expect(usdToMicros(account.month_spend_usd)).toBe(cost);
  });

  it('100 concurrent requests on credits for about 20: never below zero, each success charged exactly, the rest 402 with no upstream call', async () => {
    const perRequest = expectedCostMicros(PRICED, upstream.usage); // 20 + 10000 micro-USD
    const credits = perRequest * 20n;
    const { accountId, key } = await admin.createAccount({ creditsUsd: (Number(credits) / 1e6).toFixed(6) });
    upstream.delayMs = 100; // every hold is taken while the first requests are still running

    const sdk = client(key);
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, () => sdk.chat.completions.create({ model: PRICED.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 })),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    const declined = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok.length).toBeGreaterThanOrEqual(15);
    expect(ok.length).toBeLessThanOrEqual(20);
    for (const r of declined) {
      expect(r.reason.status).toBe(402);
      expect(r.reason.code).toBe('insufficient_credits');
    }
    expect(upstream.requests).toHaveLength(ok.length);

    const ledger = await ledgerOf(accountId);
    expect(ledger.balance).toBe(credits - perRequest * BigInt(ok.length));
    expect(ledger.balance >= 0n).toBe(true);
    expect(ledger.reserved).toBe(0n);
    expect(ledger.sum).toBe(ledger.balance);
    const charges = ledger.rows.filter((r: any) => r.kind === 'charge');
    expect(charges).toHaveLength(ok.length);
    expect(charges.every((r: any) => r.amount_micros === String(-perRequest))).toBe(true);

    const usage = await admin.usage(accountId);
    expect(usage.totals.requests).toBe(100);
  });

  it('100 concurrent requests within a monthly limit for about 20: spend never above the limit, the rest 402 monthly_limit_reached', async () => {
    const perRequest = expectedCostMicros(PRICED, upstream.usage);
    const limit = perRequest * 20n;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '100', monthlyLimitUsd: (Number(limit) / 1e6).toFixed(6) });
    upstream.delayMs = 100;

    const sdk = client(key);
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, () => sdk.chat.completions.create({ model: PRICED.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 })),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    expect(ok.length).toBeGreaterThanOrEqual(15);
    expect(ok.length).toBeLessThanOrEqual(20);
    for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) {
      expect(r.reason.status).toBe(402);
      expect(r.reason.code).toBe('monthly_limit_reached');
    }
    expect(upstream.requests).toHaveLength(ok.length);
    const account = await admin.account(accountId);
    expect(usdToMicros(account.month_spend_usd)).toBe(perRequest * BigInt(ok.length));
    expect(usdToMicros(account.month_spend_usd) <= limit).toBe(true);
  });

  it("does not count last month's spend against this month's limit", async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1', monthlyLimitUsd: '0.1' });
    const now = new Date();
    const lastMonth = monthKey(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)));
    await db.query(`INSERT INTO monthly_counters (account_id, month, spend_micros) VALUES ($1, $2, 100000)`, [accountId, lastMonth]);

    const res = await client(key).chat.completions.create({ model: PRICED.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 });
    expect(res.usage?.completion_tokens).toBe(100);
    expect(usdToMicros((await admin.account(accountId)).month_spend_usd)).toBe(expectedCostMicros(PRICED, upstream.usage));
  });

  it('caps the output to what the credits afford when the client set no max_tokens, and sends the cap upstream', async () => {
    // 1000 micro-USD at 10 micro-USD per output token (input free): 100 tokens.
    const { accountId, key } = await admin.createAccount({ creditsUsd: '0.001' });
    upstream.usage = { prompt_tokens: 10, completion_tokens: 100 };
    await client(key).chat.completions.create({ model: OUTPUT_ONLY.id, messages: [{ role: 'user', content: 'Write a long story.' }] });
    expect(upstream.requests).toHaveLength(1);
    expect(upstream.requests[0].max_tokens).toBe(100);
    const ledger = await ledgerOf(accountId);
    expect(ledger.balance).toBe(0n);
    expect(ledger.sum).toBe(0n);
  });

  it('leaves max_tokens alone when the model maximum is affordable', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    await client(key).chat.completions.create({ model: OUTPUT_ONLY.id, messages: [{ role: 'user', content: 'hi' }] });
    expect(upstream.requests[0].max_tokens ?? OUTPUT_ONLY.maxOutput).toBe(OUTPUT_ONLY.maxOutput);
  });

  it("answers 402 insufficient_credits when the client's own max_tokens cannot be afforded, with no upstream call and nothing debited", async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '0.001' });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: OUTPUT_ONLY.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 101 }),
    });
    expect(res.status).toBe(402);
    const body: any = await res.json();
    expect(body.error).toMatchObject({ code: 'insufficient_credits', type: 'insufficient_quota' });
    expect(body.error.message).toMatch(/at most 100 output tokens/);
    expect(upstream.requests).toHaveLength(0);
    const ledger = await ledgerOf(accountId);
    expect(ledger).toMatchObject({ balance: 1000n, reserved: 0n, sum: 1000n });

    // One token fewer fits exactly.
    await client(key).chat.completions.create({ model: OUTPUT_ONLY.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 });
    expect(upstream.requests).toHaveLength(1);
  });

  it('answers 402 monthly_limit_reached for an account at its limit, and insufficient_credits for an empty one', async () => {
    const limited = await admin.createAccount({ creditsUsd: '1', monthlyLimitUsd: '0' });
    const err = await client(limited.key)
      .chat.completions.create({ model: PRICED.id, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(err).toMatchObject({ status: 402, code: 'monthly_limit_reached' });
    const empty = await admin.createAccount();
    const err2 = await client(empty.key)
      .chat.completions.create({ model: PRICED.id, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(err2).toMatchObject({ status: 402, code: 'insufficient_credits' });
    expect(upstream.requests).toHaveLength(0);
  });
});

describe('chat billing across two app instances on one database', () => {
  let upstream: BillingUpstream;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    upstream = await startUpstream();
    [a, b] = await Promise.all([startTestApp({ config: useUpstream(upstream) }), startTestApp({ config: useUpstream(upstream) })]);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await upstream.close();
  });

  it('never overspends when both replicas serve the same account at once', async () => {
    const perRequest = expectedCostMicros(PRICED, upstream.usage);
    const credits = perRequest * 20n;
    const { accountId, key } = await new AdminClient(a.url).createAccount({ creditsUsd: (Number(credits) / 1e6).toFixed(6) });
    upstream.delayMs = 100;
    const clients = [a, b].map((gw) => new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 }));
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) =>
        clients[i % 2].chat.completions.create({ model: PRICED.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 }),
      ),
    );
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    expect(ok).toBeGreaterThanOrEqual(15);
    expect(ok).toBeLessThanOrEqual(20);
    expect(results.filter((r) => r.status === 'rejected').every((r) => (r as PromiseRejectedResult).reason.code === 'insufficient_credits')).toBe(true);
    expect(upstream.requests).toHaveLength(ok);

    const db = a.app.get(DataSource);
    const [account] = await db.query(`SELECT balance_micros, reserved_micros FROM accounts WHERE id = $1`, [accountId]);
    const [ledger] = await db.query(`SELECT SUM(amount_micros) AS sum FROM ledger_entries WHERE account_id = $1`, [accountId]);
    expect(BigInt(account.balance_micros)).toBe(credits - perRequest * BigInt(ok));
    expect(account.reserved_micros).toBe('0');
    expect(ledger.sum).toBe(account.balance_micros);
  });
});
