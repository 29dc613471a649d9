import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { moneyOf, PricedModel, postChat, sdk, useFakeGateway, waitForUsageRows } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

const PRICED: PricedModel = { id: 'metered-chat', input: 2, output: 100, maxOutput: 4096 };
const CHAT = '/v1/chat/completions';
const hi = [{ role: 'user' as const, content: 'hi' }];

/** The value of one sample of the Prometheus text exposition (0 when the series does not exist yet). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(match[3]);
  }
  return 0;
}

describe('GET /metrics', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useFakeGateway([PRICED]);
  beforeAll(() => ({ fake, gw, admin, db } = suite));

  const scrape = async () => {
    const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.text();
  };

  beforeEach(() => fake.resetState());

  it('answers 401 invalid_admin_token without the admin token, with a wrong one and with an API key', async () => {
    const { key } = await admin.createAccount();
    for (const authorization of [undefined, 'Bearer wrong-token', `Bearer ${key}`, TEST_ADMIN_TOKEN]) {
      const res = await fetch(`${gw.url}/metrics`, { headers: authorization ? { authorization } : {} });
      expect(res.status).toBe(401);
      const body = (await res.json()) as { error: { code: string } };
      expect(body.error.code).toBe('invalid_admin_token');
    }
  });

  it('counts requests by endpoint, status and code, with tokens and cost equal to the usage records and the ledger', async () => {
    const { accountId, keyId, key } = await admin.createAccount({ creditsUsd: '1' });
    const before = await scrape();
    fake.reply = { content: 'one two three', promptTokens: 21, completionTokens: 3 };

    await sdk(gw, key).chat.completions.create({ model: PRICED.id, messages: hi, max_tokens: 50 });
    const stream = await sdk(gw, key).chat.completions.create({ model: PRICED.id, messages: hi, max_tokens: 50, stream: true });
    for await (const _chunk of stream) void _chunk;
    expect((await postChat(gw, key, { model: 'no-such-model', messages: hi })).status).toBe(400);
    const rows = await waitForUsageRows(db, accountId, 3);
    expect(rows).toHaveLength(3);

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);
    expect(delta('gateway_requests_total', { endpoint: CHAT, status: '200', code: 'none' })).toBe(2);
    expect(delta('gateway_requests_total', { endpoint: CHAT, status: '400', code: 'unknown_model' })).toBe(1);
    expect(delta('gateway_request_duration_seconds_count', { endpoint: CHAT })).toBe(3);
    expect(delta('gateway_upstream_duration_seconds_count', { endpoint: CHAT })).toBe(2);
    expect(delta('gateway_stream_time_to_first_byte_seconds_count')).toBe(1);

    const sum = (column: 'prompt_tokens' | 'completion_tokens') => rows.reduce((n, r) => n + r[column], 0);
    expect(delta('gateway_tokens_total', { model: PRICED.id, kind: 'prompt' })).toBe(sum('prompt_tokens'));
    expect(delta('gateway_tokens_total', { model: PRICED.id, kind: 'completion' })).toBe(sum('completion_tokens'));
    expect(sum('completion_tokens')).toBe(6);

    const charged = (await moneyOf(db, accountId)).charges.reduce((n, c) => n + c.amount, 0n);
    expect(charged).toBeGreaterThan(0n);
    expect(delta('gateway_cost_charged_microusd_total', { model: PRICED.id })).toBe(Number(charged));

    // Bounded labels: no account, key or request ids, and unknown models collapse into "other".
    for (const id of [accountId, keyId, ...rows.map((r) => r.request_id)]) expect(after).not.toContain(id);
    expect(after).not.toContain('no-such-model');
  });

  it('counts the token classes as kinds of gateway_tokens_total, equal to the usage records', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const before = await scrape();
    fake.reply = {
      content: 'one two three',
      promptTokens: 2000,
      completionTokens: 300,
      usageDetails: { prompt: { cached_tokens: 1024, cache_write_tokens: 256, cache_write_1h_tokens: 96, audio_tokens: 300 }, completion: { audio_tokens: 120, reasoning_tokens: 64 } },
    };
    await sdk(gw, key).chat.completions.create({ model: PRICED.id, messages: hi, max_tokens: 500 });
    const stream = await sdk(gw, key).chat.completions.create({ model: PRICED.id, messages: hi, max_tokens: 500, stream: true });
    for await (const _chunk of stream) void _chunk;
    const rows = await waitForUsageRows(db, accountId, 2);
    await moneyOf(db, accountId);

    const after = await scrape();
    const columns = ['cached', 'cache_write', 'cache_write_1h', 'audio_input', 'reasoning', 'audio_output'] as const;
    const counted = Object.fromEntries(columns.map((kind) => [kind, sample(after, 'gateway_tokens_total', { model: PRICED.id, kind }) - sample(before, 'gateway_tokens_total', { model: PRICED.id, kind })]));
    const recorded = Object.fromEntries(columns.map((kind) => [kind, rows.reduce((n, r) => n + Number(r[`${kind}_tokens` as keyof typeof r]), 0)]));
    expect(counted).toEqual(recorded);
    expect(counted).toEqual({ cached: 2048, cache_write: 512, cache_write_1h: 192, audio_input: 600, reasoning: 128, audio_output: 240 });
  });

  it('shows an open stream and its hold while it runs, and neither once it ends', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply = { content: 'a b c d e f', promptTokens: 5, completionTokens: 6 };
    fake.chunkDelayMs = 300;
    const idle = await scrape();
    expect(sample(idle, 'gateway_active_streams')).toBe(0);

    const stream = await sdk(gw, key).chat.completions.create({ model: PRICED.id, messages: hi, max_tokens: 100, stream: true });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();

    // Other test files may leave holds in the shared database: the gauges must equal the table, and
    // this account must hold exactly one while its stream runs.
    const holdsNow = async () => {
      const [all] = await db.query(`SELECT count(*)::int AS n, COALESCE(sum(amount_micros), 0)::bigint AS sum FROM holds`);
      const [own] = await db.query(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [accountId]);
      return { n: all.n as number, sum: Number(all.sum), own: own.n as number };
    };
    const during = await scrape();
    const held = await holdsNow();
    expect(held.own).toBe(1);
    expect(sample(during, 'gateway_active_streams')).toBe(1);
    expect(sample(during, 'gateway_outstanding_holds')).toBe(held.n);
    expect(sample(during, 'gateway_outstanding_holds_microusd')).toBe(held.sum);
    expect(held.sum).toBeGreaterThan(0);

    while (!(await iterator.next()).done);
    await waitForUsageRows(db, accountId, 1);
    const done = await scrape();
    const after = await holdsNow();
    expect(after.own).toBe(0);
    expect(sample(done, 'gateway_active_streams')).toBe(0);
    expect(sample(done, 'gateway_outstanding_holds')).toBe(after.n);
    expect(sample(done, 'gateway_outstanding_holds_microusd')).toBe(after.sum);
  });

  it('includes the process metrics of prom-client', async () => {
    const text = await scrape();
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(text).toContain('# TYPE gateway_requests_total counter');
  });
});
