import 'reflect-metadata';
import { validateGatewayConfig } from '../src/config/gateway-config.loader';
import { PROVIDER_TYPES } from '../src/providers/provider-types';
import { AdminClient } from './support/admin-client';
import { moneyOf, postChat, postJson, PricedModel, readSseData, useFakeGateway, waitForUsageRows, withFakeProvider } from './support/chat-support';
import { startFakeUpstream, FakeUpstream } from './support/fake-upstream';
import { postMessages } from './support/messages-support';
import { defaultRawConfig, startTestApp, TestApp } from './support/test-app';

/**
 * rpm and tpm per key and per account (DESIGN.md 12.4), counted in this process (no REDIS_URL): the limits from the
 * admin API and the config, the 429 that names its limit with no hold, charge or upstream call, the x-ratelimit-*
 * headers, and the tokens held at admission trued up to the upstream's count at settlement.
 * The windows are a minute long: every count below happens well inside one.
 */
const MODEL: PricedModel = { id: 'rl-model', input: 1, output: 2, maxOutput: 1000 };
const MESSAGES = [{ role: 'user', content: 'hi' }];
/** The hold's bound of MESSAGES' prompt (docs/billing.md): its JSON's bytes, plus 3. */
const PROMPT_BOUND = 3 + Buffer.byteLength(JSON.stringify(MESSAGES));
/** What the fake upstream reports by default: 12 prompt and 5 completion tokens. */
const USED = 17;

function chat(gw: TestApp, key: string, maxTokens = 10, extra: Record<string, unknown> = {}): Promise<Response> {
  return postChat(gw, key, { model: MODEL.id, messages: MESSAGES, max_tokens: maxTokens, ...extra });
}

function rateHeaders(res: Response): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const measure of ['requests', 'tokens']) {
    for (const part of ['limit', 'remaining', 'reset']) out[`${part}-${measure}`] = res.headers.get(`x-ratelimit-${part}-${measure}`);
  }
  return out;
}

async function expectRefused(res: Response, message: RegExp): Promise<void> {
  expect(res.status).toBe(429);
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
  const body = (await res.json()) as any;
  expect(body.error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error' });
  expect(body.error.message).toMatch(message);
}

describe('rate limits per key and per account (in process)', () => {
  const suite = useFakeGateway([MODEL]);

  async function account(credits: string | null = '5') {
    const created = await suite.admin.createAccount(credits === null ? {} : { creditsUsd: credits });
    suite.fake.resetState();
    return created;
  }

  async function patch(path: string, body: Record<string, unknown>) {
    const res = await suite.admin.request('PATCH', path, body);
    expect(res.status).toBe(200);
    return res.body;
  }

  it('has no x-ratelimit-* header when no limit applies', async () => {
    const { key } = await account();
    const res = await chat(suite.gw, key);
    expect(res.status).toBe(200);
    expect(Object.values(rateHeaders(res)).every((v) => v === null)).toBe(true);
  });

  it("refuses a key's requests over its rpm: 429 naming it, Retry-After, no hold, charge or upstream call", async () => {
    const { accountId, key, keyId } = await account();
    const view = await patch(`/keys/${keyId}`, { rpm: 3 });
    expect(view).toMatchObject({ rpm: 3, tpm: null, rate_limits: { rpm: 3, tpm: null } });
    for (const remaining of ['2', '1', '0']) {
      const res = await chat(suite.gw, key);
      expect(res.status).toBe(200);
      expect(rateHeaders(res)).toMatchObject({ 'limit-requests': '3', 'remaining-requests': remaining, 'limit-tokens': null });
      expect(rateHeaders(res)['reset-requests']).toMatch(/^(\d+(\.\d+)?s|\d+ms|1m0s)$/);
    }
    await waitForUsageRows(suite.db, accountId, 3);
    const before = await moneyOf(suite.db, accountId);
    const refused = await chat(suite.gw, key);
    expect(rateHeaders(refused)).toMatchObject({ 'limit-requests': '3', 'remaining-requests': '0' });
    await expectRefused(refused, /this API key's limit of 3 requests per minute/);
    expect(suite.fake.requests).toHaveLength(3);
    const rows = await waitForUsageRows(suite.db, accountId, 4);
    expect(rows.filter((r) => r.status === 429)).toEqual([expect.objectContaining({ error_code: 'rate_limit_exceeded', cost_micros: '0' })]);
    expect(await moneyOf(suite.db, accountId)).toEqual(before);
  });

  it("counts every key of an account against the account's rpm, on chat, Responses and Messages, not count_tokens", async () => {
    const { accountId, key } = await account();
    const second = (await suite.admin.request('POST', `/accounts/${accountId}/keys`, { name: 'second' })).body.key;
    expect(await patch(`/accounts/${accountId}`, { rpm: 3 })).toMatchObject({ rpm: 3, tpm: null, rate_limits: { rpm: 3, tpm: null } });
    expect((await chat(suite.gw, key)).status).toBe(200);
    const responses = await postJson(suite.gw, second, '/v1/responses', { model: MODEL.id, input: 'hi', max_output_tokens: 16 });
    expect(responses.status).toBe(200);
    expect(rateHeaders(responses)).toMatchObject({ 'limit-requests': '3', 'remaining-requests': '1' });
    const counted = await postMessages(suite.gw, key, { model: MODEL.id, messages: MESSAGES }, '/v1/messages/count_tokens');
    expect(counted.status).toBe(200);
    expect(counted.headers.get('x-ratelimit-limit-requests')).toBeNull();
    expect((await postMessages(suite.gw, second, { model: MODEL.id, max_tokens: 10, messages: MESSAGES })).status).toBe(200);
    const refused = await postMessages(suite.gw, key, { model: MODEL.id, max_tokens: 10, messages: MESSAGES });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', message: expect.stringMatching(/this account's limit of 3 requests per minute/) } });
    expect(suite.fake.requests).toHaveLength(3);
  });

  it('holds the prompt estimate plus the output limit at admission, trued up to the upstream count at settlement', async () => {
    const { accountId, key, keyId } = await account();
    await patch(`/keys/${keyId}`, { tpm: 200 });
    const held = PROMPT_BOUND + 10;
    const first = await chat(suite.gw, key);
    expect(rateHeaders(first)).toMatchObject({ 'limit-tokens': '200', 'remaining-tokens': String(200 - held), 'limit-requests': null });
    await waitForUsageRows(suite.db, accountId, 1);
    // The first request now holds what the upstream counted (12 + 5), not its bound.
    const second = await chat(suite.gw, key);
    expect(rateHeaders(second)).toMatchObject({ 'remaining-tokens': String(200 - USED - held) });
    await waitForUsageRows(suite.db, accountId, 2);
    // A failed request gives its tokens back.
    suite.fake.failNext('status4xx');
    const failed = await chat(suite.gw, key);
    expect(failed.status).toBe(400);
    expect(rateHeaders(failed)).toMatchObject({ 'remaining-tokens': String(200 - 2 * USED - held) });
    await waitForUsageRows(suite.db, accountId, 3);
    // 34 held: 34 + (PROMPT_BOUND + 140) is over 200.
    const before = await moneyOf(suite.db, accountId);
    const over = await chat(suite.gw, key, 140);
    expect(rateHeaders(over)).toMatchObject({ 'limit-tokens': '200', 'remaining-tokens': String(200 - 2 * USED) });
    await expectRefused(over, new RegExp(`this API key's limit of 200 tokens per minute \\(this request holds ${PROMPT_BOUND + 140}`));
    // Larger than the whole tpm: never admitted, and said so.
    await expectRefused(await chat(suite.gw, key, 500), /Request too large: .* more than this API key's whole limit of 200 tokens per minute, so it can never be admitted/);
    expect(suite.fake.requests).toHaveLength(3);
    expect(await moneyOf(suite.db, accountId)).toEqual(before);
  });

  it('counts the output limit of every choice (n)', async () => {
    const { key, keyId } = await account();
    await patch(`/keys/${keyId}`, { tpm: 1000 });
    const res = await chat(suite.gw, key, 10, { n: 3 });
    expect(res.status).toBe(200);
    expect(rateHeaders(res)['remaining-tokens']).toBe(String(1000 - PROMPT_BOUND - 30));
  });

  it('sends the headers of the tightest limit, on a streamed answer and on an error after the check', async () => {
    const { accountId, key, keyId } = await account(null);
    await patch(`/keys/${keyId}`, { rpm: 10, tpm: 100_000 });
    await patch(`/accounts/${accountId}`, { rpm: 2, tpm: 1_000_000 });
    const declined = await chat(suite.gw, key);
    expect(declined.status).toBe(402);
    // Requests: the account's 2 (1 left) is tighter than the key's 10 (9 left); tokens: the key's.
    expect(rateHeaders(declined)).toMatchObject({ 'limit-requests': '2', 'remaining-requests': '1', 'limit-tokens': '100000', 'remaining-tokens': String(100_000 - PROMPT_BOUND - 10) });
    await suite.admin.addCredits(accountId, '5');
    const streamed = await chat(suite.gw, key, 10, { stream: true });
    expect(streamed.status).toBe(200);
    // The 402 gave its tokens back; its request still counts.
    expect(rateHeaders(streamed)).toMatchObject({ 'limit-requests': '2', 'remaining-requests': '0', 'remaining-tokens': String(100_000 - PROMPT_BOUND - 10) });
    expect((await readSseData(streamed)).at(-1)).toBe('[DONE]');
  });

  it('PATCH takes positive integers or null, and null goes back to the default', async () => {
    const { accountId, keyId } = await account();
    for (const bad of [0, -1, 1.5, '5', 2 ** 31]) {
      expect((await suite.admin.request('PATCH', `/keys/${keyId}`, { rpm: bad })).status).toBe(400);
      expect((await suite.admin.request('PATCH', `/accounts/${accountId}`, { tpm: bad })).status).toBe(400);
    }
    await patch(`/accounts/${accountId}`, { rpm: 5, tpm: 50 });
    expect(await patch(`/accounts/${accountId}`, { tpm: null })).toMatchObject({ rpm: 5, tpm: null, rate_limits: { rpm: 5, tpm: null } });
    expect((await suite.admin.account(accountId)).rate_limits).toEqual({ rpm: 5, tpm: null });
    await patch(`/keys/${keyId}`, { rpm: 7 });
    const keys = (await suite.admin.request('GET', `/accounts/${accountId}/keys`)).body.data;
    expect(keys[0]).toMatchObject({ rpm: 7, tpm: null, rate_limits: { rpm: 7, tpm: null } });
    expect((await suite.admin.request('PATCH', `/accounts/00000000-0000-4000-8000-000000000000`, { rpm: 1 })).status).toBe(404);
  });
});

describe('rate limits: the config defaults', () => {
  let fake: FakeUpstream;
  let gw: TestApp;
  let admin: AdminClient;

  beforeAll(async () => {
    fake = await startFakeUpstream();
    gw = await startTestApp({
      config: (raw) => {
        withFakeProvider(fake.url, [MODEL])(raw);
        raw.rate_limits = { keys: { rpm: 2 }, accounts: { tpm: 1_000_000 } };
      },
    });
    admin = new AdminClient(gw.url);
  });
  afterAll(async () => {
    await gw?.close();
    await fake?.close();
  });

  it("apply to every key and account until overridden; null clears the override back to them", async () => {
    const { accountId, key, keyId } = await admin.createAccount({ creditsUsd: '5' });
    expect(await admin.account(accountId)).toMatchObject({ rpm: null, tpm: null, rate_limits: { rpm: null, tpm: 1_000_000 } });
    const first = await chat(gw, key);
    expect(rateHeaders(first)).toMatchObject({ 'limit-requests': '2', 'remaining-requests': '1', 'limit-tokens': '1000000' });
    expect((await chat(gw, key)).status).toBe(200);
    await expectRefused(await chat(gw, key), /this API key's limit of 2 requests per minute/);
    expect((await admin.request('PATCH', `/keys/${keyId}`, { rpm: 3 })).body).toMatchObject({ rpm: 3, rate_limits: { rpm: 3 } });
    expect(rateHeaders(await chat(gw, key))).toMatchObject({ 'limit-requests': '3', 'remaining-requests': '0' });
    expect((await admin.request('PATCH', `/keys/${keyId}`, { rpm: null })).body).toMatchObject({ rpm: null, rate_limits: { rpm: 2 } });
    await expectRefused(await chat(gw, key), /this API key's limit of 2 requests per minute/);
  });

  it('are checked at start, naming the field', () => {
    for (const [rate_limits, field] of [
      [{ keys: { rpm: 0 } }, 'rate_limits.keys.rpm'],
      [{ accounts: { tpm: 1.5 } }, 'rate_limits.accounts.tpm'],
      [{ keys: { rpm: 1, burst: 2 } }, 'rate_limits.keys.burst'],
    ] as const) {
      const raw = defaultRawConfig();
      raw.rate_limits = rate_limits;
      expect(() => validateGatewayConfig(raw, PROVIDER_TYPES, 'test')).toThrow(field);
    }
  });
});
