import { AdminClient } from './support/admin-client';
import { postChat, PricedModel, waitForUsageRows, withFakeProvider } from './support/chat-support';
import { FakeUpstream, startFakeUpstream } from './support/fake-upstream';
import { redisForTests, TestRedis } from './support/own-redis';
import { startTestApp, TestApp } from './support/test-app';
import { DataSource } from 'typeorm';

/**
 * Issue 47, "done when": two replicas on one Redis hold a key's rpm and tpm exactly under concurrent load, and the
 * headers agree with the limits. Two gateway apps share one Redis (and one PostgreSQL); concurrent requests spread
 * over both are admitted exactly up to the limit, each admitted answer's `remaining` is a different step of one
 * count, and the refused ones reach neither the upstream nor the ledger. Every count happens inside one minute's
 * window: no assertion depends on timing.
 */
jest.setTimeout(120_000);

const MODEL: PricedModel = { id: 'rl-replicas', input: 1, output: 2, maxOutput: 1000 };
const MESSAGES = [{ role: 'user', content: 'hi' }];
const PROMPT_BOUND = 3 + Buffer.byteLength(JSON.stringify(MESSAGES));
const MAX_TOKENS = 10;
const HELD = PROMPT_BOUND + MAX_TOKENS;
const CONCURRENT = 40;

const redis = redisForTests('rate-limits-replicas.e2e-spec');
(redis.skip ? describe.skip : describe)('rate limits across two replicas on one Redis', () => {
  let server: TestRedis;
  let fake: FakeUpstream;
  let replicas: TestApp[];
  let admin: AdminClient;
  let db: DataSource;

  beforeAll(async () => {
    [server, fake] = await Promise.all([redis.start(), startFakeUpstream()]);
    const start = () => startTestApp({ config: withFakeProvider(fake.url, [MODEL]), env: { redisUrl: server.url } });
    replicas = [await start()];
    replicas.push(await start());
    admin = new AdminClient(replicas[0].url);
    db = replicas[0].app.get(DataSource);
  });
  afterAll(async () => {
    await Promise.all(replicas?.map((r) => r.close()) ?? []);
    await Promise.all([fake?.close(), server?.stop()]);
  });

  /** A key whose controls are set through the admin API of the second replica (the first hears of them by NOTIFY). */
  async function limitedKey(controls: Record<string, unknown>) {
    const created = await admin.createAccount({ creditsUsd: '5' });
    const res = await new AdminClient(replicas[1].url).request('PATCH', `/keys/${created.keyId}`, controls);
    expect(res.status).toBe(200);
    return created;
  }

  /** CONCURRENT requests at once, alternating between the replicas. */
  async function burst(key: string) {
    fake.resetState();
    // The upstream counts what was held: the true-up changes nothing, so the count cannot depend on when settlements land.
    fake.reply = { ...fake.reply, promptTokens: PROMPT_BOUND, completionTokens: MAX_TOKENS };
    return Promise.all(
      Array.from({ length: CONCURRENT }, async (_, i) => {
        const res = await postChat(replicas[i % 2], key, { model: MODEL.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
        const body = (await res.json()) as any;
        const header = (name: string) => res.headers.get(`x-ratelimit-${name}`);
        return { status: res.status, body, remainingRequests: header('remaining-requests'), remainingTokens: header('remaining-tokens'), limitRequests: header('limit-requests'), limitTokens: header('limit-tokens') };
      }),
    );
  }

  it("holds a key's rpm exactly, the headers counting down one admission at a time", async () => {
    const RPM = 12;
    const { accountId, key } = await limitedKey({ rpm: RPM });
    const outcomes = await burst(key);
    const served = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status === 429);
    expect(served).toHaveLength(RPM);
    expect(refused).toHaveLength(CONCURRENT - RPM);
    expect(served.map((o) => Number(o.remainingRequests)).sort((a, b) => a - b)).toEqual(Array.from({ length: RPM }, (_, i) => i));
    expect(outcomes.every((o) => o.limitRequests === String(RPM) && o.limitTokens === null)).toBe(true);
    expect(refused.every((o) => o.remainingRequests === '0' && o.body.error.code === 'rate_limit_exceeded')).toBe(true);
    expect(fake.requests).toHaveLength(RPM);
    const rows = await waitForUsageRows(db, accountId, CONCURRENT);
    expect(rows.filter((r) => r.status === 200 && BigInt(r.cost_micros) > 0n)).toHaveLength(RPM);
    expect(rows.filter((r) => r.status === 429 && r.cost_micros === '0')).toHaveLength(CONCURRENT - RPM);
  });

  it("holds a key's tpm exactly, the headers counting down one hold at a time", async () => {
    const ADMITTED = 9;
    const TPM = ADMITTED * HELD + HELD - 1;
    const { accountId, key } = await limitedKey({ tpm: TPM });
    const outcomes = await burst(key);
    const served = outcomes.filter((o) => o.status === 200);
    expect(served).toHaveLength(ADMITTED);
    expect(served.map((o) => Number(o.remainingTokens)).sort((a, b) => a - b)).toEqual(Array.from({ length: ADMITTED }, (_, i) => HELD - 1 + i * HELD));
    const refused = outcomes.filter((o) => o.status === 429);
    expect(refused).toHaveLength(CONCURRENT - ADMITTED);
    expect(refused.every((o) => o.remainingTokens === String(HELD - 1) && /this API key's limit of \d+ tokens per minute/.test(o.body.error.message))).toBe(true);
    expect(fake.requests).toHaveLength(ADMITTED);
    await waitForUsageRows(db, accountId, CONCURRENT);
  });

  it('trues the tokens up in Redis to what the upstream counted, seen by the other replica', async () => {
    const TPM = 1000;
    const { accountId, key } = await limitedKey({ tpm: TPM });
    fake.resetState();
    const first = await postChat(replicas[0], key, { model: MODEL.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
    expect(first.headers.get('x-ratelimit-remaining-tokens')).toBe(String(TPM - HELD));
    await first.text();
    await waitForUsageRows(db, accountId, 1);
    // The fake's default usage: 12 prompt and 5 completion tokens.
    const second = await postChat(replicas[1], key, { model: MODEL.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
    expect(second.headers.get('x-ratelimit-remaining-tokens')).toBe(String(TPM - 17 - HELD));
    await second.text();
  });
});
