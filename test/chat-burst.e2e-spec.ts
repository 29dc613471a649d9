import { ThrottlerStorage } from '@nestjs/throttler';
import { once } from 'node:events';
import OpenAI from 'openai';
import { FixedWindowRedisStorage } from '../src/burst-limit/fixed-window-redis-storage';
import { AdminClient } from './support/admin-client';
import { moneyOf, postChat, PricedModel, useGatewayWithFake, waitForUsageRows, withFakeProvider } from './support/chat-support';
import { redisForTests, TestRedis } from './support/own-redis';
import { RawConfig, startTestApp, TestApp } from './support/test-app';

const LIMIT = 5;

function burst(window_s: number) {
  return (raw: RawConfig) => {
    raw.limits.chat_burst = { requests: LIMIT, window_s };
  };
}

/** A cheap, valid chat request answered by the built-in dev-echo model. */
function chat(gw: TestApp, key: string): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
  });
}

async function expectRateLimited(res: Response): Promise<void> {
  expect(res.status).toBe(429);
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  const body: any = await res.json();
  expect(body.error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error' });
}

describe('chat burst limit per account (in-process counters)', () => {
  let gw: TestApp;
  let admin: AdminClient;

  beforeAll(async () => {
    gw = await startTestApp({ config: burst(60) });
    admin = new AdminClient(gw.url);
  });
  afterAll(() => gw.close());

  it('answers 429 rate_limit_exceeded with Retry-After once an account exceeds the burst, leaving other accounts alone', async () => {
    const first = await admin.createAccount({ creditsUsd: 1 });
    const second = await admin.createAccount({ creditsUsd: 1 });
    for (let i = 0; i < LIMIT; i++) {
      const res = await chat(gw, first.key);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe(String(LIMIT));
    }
    await expectRateLimited(await chat(gw, first.key));

    // Throttled requests are not billed and are recorded with their code.
    // The usage record is written when the response closes; give it a moment.
    await new Promise((r) => setTimeout(r, 200));
    const usage = await admin.usage(first.accountId);
    expect(usage.totals.requests).toBe(LIMIT + 1);
    expect(usage.latest.filter((r: any) => r.status === 429)).toEqual([
      expect.objectContaining({ error_code: 'rate_limit_exceeded', cost_usd: '0.000000' }),
    ]);

    expect((await chat(gw, second.key)).status).toBe(200);
  });

  it('gives a streamed answer the X-RateLimit headers too (written on the raw response with its status line)', async () => {
    const { key } = await admin.createAccount({ creditsUsd: 1 });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'dev-echo', stream: true, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('x-ratelimit-limit')).toBe(String(LIMIT));
    expect(res.headers.get('x-ratelimit-remaining')).toBe(String(LIMIT - 1));
    expect(await res.text()).toContain('data: [DONE]');
  });

  it('tracks the account, not the key: a second key of the same account shares the budget', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: 1 });
    const other = await admin.request('POST', `/accounts/${accountId}/keys`, { name: 'second' });
    expect(other.status).toBe(201);
    for (let i = 0; i < LIMIT; i++) expect((await chat(gw, i % 2 ? key : other.body.key)).status).toBe(200);
    await expectRateLimited(await chat(gw, other.body.key));
  });

  it('counts chat, Responses and Messages requests in one budget per account', async () => {
    const { key } = await admin.createAccount({ creditsUsd: 1 });
    const post = (path: string, body: object) =>
      fetch(`${gw.url}/v1/${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const messages = { model: 'dev-echo', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] };
    const statuses = [
      (await chat(gw, key)).status,
      (await post('responses', { model: 'dev-echo', input: 'hi', max_output_tokens: 16 })).status,
      (await post('messages', messages)).status,
      (await post('messages/count_tokens', { model: 'dev-echo', messages: messages.messages })).status,
      (await chat(gw, key)).status,
    ];
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    await expectRateLimited(await post('responses', { model: 'dev-echo', input: 'hi', max_output_tokens: 16 }));
    const refused = await post('messages', messages);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as any).error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    await expectRateLimited(await chat(gw, key));
  });

  it('is seen by the openai SDK as a RateLimitError', async () => {
    const { key } = await admin.createAccount({ creditsUsd: 1 });
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const send = () => client.chat.completions.create({ model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    for (let i = 0; i < LIMIT; i++) await send();
    const err = await send().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.code).toBe('rate_limit_exceeded');
  });

  it('does not limit the other endpoints', async () => {
    const { key } = await admin.createAccount();
    for (let i = 0; i < LIMIT + 2; i++) {
      const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
    }
  });
});

describe('chat burst limit before every later check', () => {
  const MODEL: PricedModel = { id: 'burst-model', input: 1, output: 1, maxOutput: 100 };
  const suite = useGatewayWithFake((url) => (raw) => {
    withFakeProvider(url, [MODEL])(raw);
    burst(60)(raw);
  });
  beforeEach(() => suite.fake.resetState());

  it('answers 429 over the burst even to a request that is invalid or unaffordable, never calling the model or charging', async () => {
    const { fake, gw, admin, db } = suite;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '0.001' });
    const valid = { model: MODEL.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 };
    for (let i = 0; i < LIMIT; i++) expect((await postChat(gw, key, valid)).status).toBe(200);
    const calls = fake.requests.length;
    const { balance } = await moneyOf(db, accountId);

    await expectRateLimited(await postChat(gw, key, valid));
    await expectRateLimited(await postChat(gw, key, '{"model": "burst-model", "messages": ['));
    await expectRateLimited(await postChat(gw, key, { model: MODEL.id }));
    await expectRateLimited(await postChat(gw, key, { model: 'no-such-model', messages: valid.messages }));
    // 0.001 USD cannot cover a million output tokens: a 402 below the limit, a 429 over it.
    await expectRateLimited(await postChat(gw, key, { ...valid, max_tokens: 1_000_000 }));

    expect(fake.requests).toHaveLength(calls);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance, reserved: 0n, openHolds: 0 });
    const rows = await waitForUsageRows(db, accountId, LIMIT + 5);
    expect(rows.filter((r) => r.status === 429)).toHaveLength(5);
    expect(rows.filter((r) => r.status === 429).every((r) => r.error_code === 'rate_limit_exceeded' && r.cost_micros === '0')).toBe(true);
  });
});

describe('chat burst limit window', () => {
  let gw: TestApp | undefined;
  afterAll(() => gw?.close());

  it('lets the account through again once the window has passed', async () => {
    const app = (gw = await startTestApp({ config: burst(1) }));
    const { key } = await new AdminClient(app.url).createAccount({ creditsUsd: 1 });
    for (let i = 0; i < LIMIT; i++) expect((await chat(app, key)).status).toBe(200);
    await expectRateLimited(await chat(app, key));
    await new Promise((r) => setTimeout(r, 2100));
    expect((await chat(app, key)).status).toBe(200);
  });
});

// A redis-server of its own (REDIS_URL's when none is installed; neither: skipped, saying so in one line).
const redis = redisForTests('chat-burst.e2e-spec');
(redis.skip ? describe.skip : describe)('chat burst limit through Redis', () => {
  let server: TestRedis;
  beforeAll(async () => {
    server = await redis.start();
  });
  afterAll(() => server?.stop());

  describe('shared by two instances', () => {
    let a: TestApp;
    let b: TestApp;

    beforeAll(async () => {
      const redisUrl = server.url;
      [a, b] = await Promise.all([
        startTestApp({ config: burst(60), env: { redisUrl } }),
        startTestApp({ config: burst(60), env: { redisUrl } }),
      ]);
    });
    afterAll(() => Promise.all([a?.close(), b?.close()]));

    it('counts requests to either instance against one per-account budget', async () => {
      const admin = new AdminClient(a.url);
      const first = await admin.createAccount({ creditsUsd: 1 });
      const second = await admin.createAccount({ creditsUsd: 1 });
      for (let i = 0; i < LIMIT; i++) expect((await chat(i % 2 ? b : a, first.key)).status).toBe(200);
      await expectRateLimited(await chat(a, first.key));
      await expectRateLimited(await chat(b, first.key));
      expect((await chat(b, second.key)).status).toBe(200);
    });
  });

  it('closes its Redis connection when the app shuts down', async () => {
    const gw = await startTestApp({ env: { redisUrl: server.url } });
    const storage = gw.app.get(ThrottlerStorage) as FixedWindowRedisStorage;
    expect(storage).toBeInstanceOf(FixedWindowRedisStorage);
    // No offline queue: a command sent before the connection is ready fails rather than waits.
    if (storage.redis.status !== 'ready') await once(storage.redis, 'ready');
    await storage.redis.ping();
    const ended = storage.redis.status === 'end' ? Promise.resolve() : once(storage.redis, 'end');
    await gw.close();
    // ioredis reaches "end" when the socket has closed, a moment after disconnect().
    let timer: NodeJS.Timeout | undefined;
    const tooLate = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('Redis connection still open 2 s after shutdown')), 2000)));
    await Promise.race([ended, tooLate]).finally(() => clearTimeout(timer));
    expect(storage.redis.status).toBe('end');
  });
});
