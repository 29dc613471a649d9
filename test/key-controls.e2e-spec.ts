import { DataSource } from 'typeorm';
import { monthKey } from '../src/common/month';
import { usdToMicros } from '../src/common/money';
import { AdminClient } from './support/admin-client';
import { audioForm, audioFixture, FAKE_STT, FAKE_TTS, postSpeech, postTranscription, withFakeAudioProvider } from './support/audio-support';
import { costMicros, moneyOf, PricedModel, sdk, useGatewayWithFake, waitForUsageRows, withFakeProvider } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { postResponses } from './support/responses-support';
import { RawConfig, startTestApp, TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

// 0 and 100 micro-USD per token: a request costs 100 µUSD per output token, whatever the prompt bound.
const MODEL: PricedModel = { id: 'key-chat', input: 0, output: 100, maxOutput: 4096 };
const OTHER: PricedModel = { id: 'key-chat-other', input: 0, output: 100, maxOutput: 4096 };
const hi = [{ role: 'user' as const, content: 'hi' }];

/** The key budget's counter of this month, in micro-USD. */
async function keyCounter(db: DataSource, keyId: string): Promise<{ spend: bigint; held: bigint }> {
  const [row] = await db.query(
    `SELECT c.spend_micros, c.held_micros FROM key_monthly_counters c JOIN api_keys k ON k.budget_id = c.budget_id
      WHERE k.id = $1 AND c.month = $2`,
    [keyId, monthKey()],
  );
  return { spend: BigInt(row?.spend_micros ?? 0), held: BigInt(row?.held_micros ?? 0) };
}

describe('key controls: monthly limit, expiry, models, rotation (issue 24)', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useGatewayWithFake((url) => (raw: RawConfig) => {
    withFakeProvider(url, [MODEL, OTHER])(raw);
    withFakeAudioProvider(url)(raw);
  });
  beforeAll(() => ({ fake, gw, admin, db } = suite));
  beforeEach(() => {
    fake.resetState();
    fake.reply = { content: 'ok', promptTokens: 10, completionTokens: 10 };
  });

  async function newKey(accountId: string, body: Record<string, unknown>) {
    const res = await admin.request('POST', `/accounts/${accountId}/keys`, { name: 'limited', ...body });
    expect(res.status).toBe(201);
    return res.body as { id: string; key: string; monthly_limit_usd: string | null; month_spend_usd: string; expires_at: string | null; models: string[] | null };
  }

  describe('admin API', () => {
    it('sets the controls at creation, shows them with the month spend, and a PATCH changes only the fields it names', async () => {
      const { accountId } = await admin.createAccount({ creditsUsd: '1' });
      const created = await newKey(accountId, { monthly_limit_usd: '0.5', expires_at: '2099-01-01', models: [MODEL.id] });
      expect(created).toMatchObject({ name: 'limited', monthly_limit_usd: '0.500000', month_spend_usd: '0.000000', expires_at: '2099-01-01T00:00:00.000Z', models: [MODEL.id] });

      const patched = await admin.request('PATCH', `/keys/${created.id}`, { monthly_limit_usd: 2 });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ id: created.id, name: 'limited', monthly_limit_usd: '2.000000', expires_at: '2099-01-01T00:00:00.000Z', models: [MODEL.id] });
      const cleared = await admin.request('PATCH', `/keys/${created.id}`, { models: null, expires_at: null, name: 'renamed' });
      expect(cleared.body).toMatchObject({ name: 'renamed', monthly_limit_usd: '2.000000', expires_at: null, models: null });

      const listed = await admin.request('GET', `/accounts/${accountId}/keys`);
      expect(listed.body.data.find((k: { id: string }) => k.id === created.id)).toMatchObject({ monthly_limit_usd: '2.000000', month_spend_usd: '0.000000', models: null });
    });

    it.each([
      ['an empty model list', { models: [] }, 'models'],
      ['a model outside the catalog', { models: ['no-such-model'] }, 'models[0]'],
      ['a model list that is not an array', { models: 'key-chat' }, 'models'],
      ['a negative limit', { monthly_limit_usd: -1 }, 'monthly_limit_usd'],
      ['a limit with 7 decimals', { monthly_limit_usd: '0.0000001' }, 'monthly_limit_usd'],
      ['an expiry in another format', { expires_at: '01/02/2030' }, 'expires_at'],
    ])('refuses %s with 400 (create and PATCH)', async (_name, body, param) => {
      const { accountId, keyId } = await admin.createAccount();
      const create = await admin.request('POST', `/accounts/${accountId}/keys`, body);
      expect(create).toMatchObject({ status: 400, body: { error: { code: 'invalid_request_error', param } } });
      const patch = await admin.request('PATCH', `/keys/${keyId}`, body);
      expect(patch).toMatchObject({ status: 400, body: { error: { code: 'invalid_request_error', param } } });
    });

    it('answers 404 for a PATCH or rotation of an unknown key, and 400 for a grace period out of range', async () => {
      const unknown = '00000000-0000-4000-8000-000000000000';
      expect((await admin.request('PATCH', `/keys/${unknown}`, { name: 'x' })).status).toBe(404);
      expect((await admin.request('POST', `/keys/${unknown}/rotate`, {})).status).toBe(404);
      const { keyId } = await admin.createAccount();
      for (const grace_s of [-1, 86_401, 1.5, '10']) {
        const res = await admin.request('POST', `/keys/${keyId}/rotate`, { grace_s });
        expect(res).toMatchObject({ status: 400, body: { error: { code: 'invalid_request_error', param: 'grace_s' } } });
      }
    });
  });

  describe('monthly limit', () => {
    it('declines a key over its limit with 402 key_limit_reached before any upstream call, charging nothing; another key of the account still works', async () => {
      const { accountId, key: otherKey } = await admin.createAccount({ creditsUsd: '10' });
      // 5,000 µUSD: one request of max_tokens 40 (4,000 µUSD) fits, a second does not.
      const limited = await newKey(accountId, { monthly_limit_usd: '0.005' });
      fake.reply = { content: 'ok', promptTokens: 10, completionTokens: 40 };
      await sdk(gw, limited.key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 40 });
      await waitForUsageRows(db, accountId, 1);
      const before = await moneyOf(db, accountId);
      expect(before.charges.map((c) => c.amount)).toEqual([costMicros(MODEL, 10, 40)]);
      fake.resetState();

      const err = await sdk(gw, limited.key)
        .chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 40 })
        .catch((e) => e);
      expect(err).toMatchObject({ status: 402, code: 'key_limit_reached', type: 'insufficient_quota' });
      expect(err.message).toMatch(/\$0\.001000 of this month's \$0\.005000 key limit remains/);
      expect(fake.requests).toHaveLength(0);
      expect(await moneyOf(db, accountId)).toMatchObject({ balance: before.balance, reserved: 0n, charges: before.charges });
      expect(await keyCounter(db, limited.id)).toEqual({ spend: 4000n, held: 0n });

      // The account's other key has no limit of its own.
      fake.reply = { content: 'ok', promptTokens: 10, completionTokens: 40 };
      await sdk(gw, otherKey).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 40 });
      expect(fake.requests).toHaveLength(1);

      const listed = await admin.request('GET', `/accounts/${accountId}/keys`);
      expect(listed.body.data.find((k: { id: string }) => k.id === limited.id)).toMatchObject({ month_spend_usd: '0.004000', monthly_limit_usd: '0.005000' });
      const rows = await waitForUsageRows(db, accountId, 3);
      expect(rows.filter((r) => r.error_code === 'key_limit_reached')).toEqual([expect.objectContaining({ status: 402, cost_micros: '0' })]);
      // /metrics counts it like the other 402 codes.
      const metrics = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } })).text();
      expect(metrics).toMatch(/gateway_requests_total\{endpoint="\/v1\/chat\/completions",status="402",code="key_limit_reached"\} [1-9]/);
    });

    it('caps the allowance of a request without max_tokens to what the key limit affords, and sends that cap upstream', async () => {
      const { accountId } = await admin.createAccount({ creditsUsd: '10' });
      const limited = await newKey(accountId, { monthly_limit_usd: '0.0025' }); // 2,500 µUSD: 25 output tokens
      fake.reply = { content: 'a b c', promptTokens: 10, completionTokens: 3 };
      await sdk(gw, limited.key).chat.completions.create({ model: MODEL.id, messages: hi });
      await waitForUsageRows(db, accountId, 1);
      expect(fake.requests[0].body.max_completion_tokens).toBe(25);
      expect((await moneyOf(db, accountId)).charges.map((c) => c.amount)).toEqual([300n]);
      expect(await keyCounter(db, limited.id)).toEqual({ spend: 300n, held: 0n });
    });

    it('names credits first, then the account limit, then the key limit', async () => {
      const poor = await admin.createAccount({ creditsUsd: '0.001' });
      const poorKey = await newKey(poor.accountId, { monthly_limit_usd: '0.0001' });
      const a = await sdk(gw, poorKey.key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 20 }).catch((e) => e);
      expect(a).toMatchObject({ status: 402, code: 'insufficient_credits' });

      const capped = await admin.createAccount({ creditsUsd: '1', monthlyLimitUsd: '0.001' });
      const cappedKey = await newKey(capped.accountId, { monthly_limit_usd: '0.0001' });
      const b = await sdk(gw, cappedKey.key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 20 }).catch((e) => e);
      expect(b).toMatchObject({ status: 402, code: 'monthly_limit_reached' });
      const c = await sdk(gw, cappedKey.key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 5 }).catch((e) => e);
      expect(c).toMatchObject({ status: 402, code: 'key_limit_reached' });
      expect(fake.requests).toHaveLength(0);
    });

    it('applies a raised limit at once (PATCH), on Responses too', async () => {
      const { accountId } = await admin.createAccount({ creditsUsd: '10' });
      const limited = await newKey(accountId, { monthly_limit_usd: '0' });
      const refused = await postResponses(gw, limited.key, { model: MODEL.id, input: 'hi', max_output_tokens: 20 });
      expect(refused.status).toBe(402);
      expect(((await refused.json()) as any).error).toMatchObject({ code: 'key_limit_reached', type: 'insufficient_quota' });
      expect(fake.requests).toHaveLength(0);
      await admin.request('PATCH', `/keys/${limited.id}`, { monthly_limit_usd: '1' });
      const served = await postResponses(gw, limited.key, { model: MODEL.id, input: 'hi', max_output_tokens: 20 });
      expect(served.status).toBe(200);
    });
  });

  describe('models', () => {
    it('refuses other models with 400 model_not_allowed on chat, Responses and speech, after unknown_model, but not transcription nor /v1/models', async () => {
      const { accountId } = await admin.createAccount({ creditsUsd: '1', subscription: 'active' });
      const key = (await newKey(accountId, { models: [MODEL.id] })).key;
      const chat = await sdk(gw, key).chat.completions.create({ model: OTHER.id, messages: hi }).catch((e) => e);
      expect(chat).toMatchObject({ status: 400, code: 'model_not_allowed', param: 'model' });
      const unknown = await sdk(gw, key).chat.completions.create({ model: 'nope', messages: hi }).catch((e) => e);
      expect(unknown).toMatchObject({ status: 400, code: 'unknown_model' });
      const responses = await postResponses(gw, key, { model: OTHER.id, input: 'hi' });
      expect(responses.status).toBe(400);
      expect(((await responses.json()) as any).error).toMatchObject({ code: 'model_not_allowed', param: 'model' });
      const speech = await postSpeech(gw, key, { model: FAKE_TTS.id, input: 'Hello.' });
      expect(speech.status).toBe(400);
      expect(((await speech.json()) as any).error).toMatchObject({ code: 'model_not_allowed', param: 'model' });
      expect(fake.requests).toHaveLength(0);

      await sdk(gw, key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 10 });
      const form = audioForm({ model: 'whatever' }, { data: audioFixture('hello.wav'), name: 'hello.wav' });
      expect((await postTranscription(gw, key, form)).status).toBe(200);
      expect(fake.requests.map((r) => r.path)).toEqual(['/v1/chat/completions', '/v1/audio/transcriptions']);
      const models = await sdk(gw, key).models.list();
      expect(models.data.map((m) => m.id)).toEqual(expect.arrayContaining([MODEL.id, OTHER.id, FAKE_TTS.id, FAKE_STT.id]));
      expect((await sdk(gw, key).models.retrieve(OTHER.id)).id).toBe(OTHER.id);
    });
  });

  describe('expiry and rotation', () => {
    it('refuses a key past expires_at with 401, a cached one too, and a time already past at once', async () => {
      const { accountId } = await admin.createAccount({ creditsUsd: '1' });
      const expiresAt = new Date(Date.now() + 3000).toISOString();
      const soon = await newKey(accountId, { expires_at: expiresAt });
      await sdk(gw, soon.key).models.list(); // cached
      await new Promise((r) => setTimeout(r, Date.parse(expiresAt) - Date.now() + 50));
      await expect(sdk(gw, soon.key).models.list()).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });

      const past = await newKey(accountId, {});
      await sdk(gw, past.key).models.list();
      await admin.request('PATCH', `/keys/${past.id}`, { expires_at: '2020-01-01' });
      await expect(sdk(gw, past.key).models.list()).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
    });

    it('rotates without grace: the new key works at once with the same controls, the old one is refused', async () => {
      const { accountId } = await admin.createAccount({ creditsUsd: '1' });
      const old = await newKey(accountId, { monthly_limit_usd: '0.5', models: [MODEL.id], expires_at: '2099-01-01' });
      await sdk(gw, old.key).models.list();
      const rotated = await admin.request('POST', `/keys/${old.id}/rotate`, {});
      expect(rotated.status).toBe(201);
      expect(rotated.body).toMatchObject({ name: 'limited', monthly_limit_usd: '0.500000', models: [MODEL.id], expires_at: '2099-01-01T00:00:00.000Z' });
      expect(rotated.body.key).not.toBe(old.key);
      await expect(sdk(gw, old.key).models.list()).rejects.toMatchObject({ status: 401 });
      await sdk(gw, rotated.body.key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 10 });
      // The key list says which key replaced which (the dashboard marks it), and a second rotation extends the chain.
      const again = (await admin.request('POST', `/keys/${rotated.body.id}/rotate`, {})).body;
      const listed = new Map(((await admin.request('GET', `/accounts/${accountId}/keys`)).body.data as any[]).map((k) => [k.id, k.replaced_by]));
      expect(listed.get(old.id)).toBe(rotated.body.id);
      expect(listed.get(rotated.body.id)).toBe(again.id);
      expect(listed.get(again.id)).toBeNull();
      expect(again.replaced_by).toBeNull();
    });

    it('rotates with grace: both keys work until the grace ends, share one limit and one month spend, then the old one is refused', async () => {
      const { accountId } = await admin.createAccount({ creditsUsd: '1' });
      const old = await newKey(accountId, { monthly_limit_usd: '0.003' }); // 3,000 µUSD
      await sdk(gw, old.key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 10 }); // 1,000
      await waitForUsageRows(db, accountId, 1); // settled just after the response
      const rotated = (await admin.request('POST', `/keys/${old.id}/rotate`, { grace_s: 4 })).body;
      expect(rotated.month_spend_usd).toBe('0.001000');
      await sdk(gw, old.key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 10 }); // still works: 2,000
      await sdk(gw, rotated.key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 10 }); // 3,000
      const over = await sdk(gw, rotated.key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 10 }).catch((e) => e);
      expect(over).toMatchObject({ status: 402, code: 'key_limit_reached' });
      await waitForUsageRows(db, accountId, 4);
      const pair = async () =>
        ((await admin.request('GET', `/accounts/${accountId}/keys`)).body.data as { id: string }[]).filter((k) => k.id === old.id || k.id === rotated.id);
      expect((await pair()).map((k: any) => k.month_spend_usd)).toEqual(['0.003000', '0.003000']);

      await new Promise((r) => setTimeout(r, 4100));
      await expect(sdk(gw, old.key).models.list()).rejects.toMatchObject({ status: 401 });
      // A limit changed on the new key is the old one's too: they share it.
      const raised = await admin.request('PATCH', `/keys/${rotated.id}`, { monthly_limit_usd: '1' });
      expect(raised.body.monthly_limit_usd).toBe('1.000000');
      await sdk(gw, rotated.key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 10 });
      expect((await pair()).map((k: any) => k.monthly_limit_usd)).toEqual(['1.000000', '1.000000']);
      const money = await moneyOf(db, accountId);
      expect(money).toMatchObject({ balance: 1_000_000n - 4000n, ledgerSum: 1_000_000n - 4000n, reserved: 0n });
      expect(await keyCounter(db, rotated.id)).toEqual({ spend: 4000n, held: 0n });
    });
  });

  describe('usage views', () => {
    it("show each key's month spend against its limit in /v1/usage and the admin usage", async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      const limited = await newKey(accountId, { monthly_limit_usd: '0.5' });
      await sdk(gw, limited.key).chat.completions.create({ model: MODEL.id, messages: hi, max_tokens: 10 });
      await waitForUsageRows(db, accountId, 1);
      const own: any = await (await fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json();
      expect(own.by_key).toEqual([expect.objectContaining({ key_id: limited.id, monthly_limit_usd: '0.500000', month_spend_usd: '0.001000' })]);
      // The /v1/usage request's own record is written after its response.
      expect(await waitForUsageRows(db, accountId, 2)).toHaveLength(2);
      const adminView = await admin.usage(accountId);
      const limitedRow = adminView.by_key.find((k: { key_id: string }) => k.key_id === limited.id);
      expect(limitedRow).toMatchObject({ monthly_limit_usd: '0.500000', month_spend_usd: '0.001000' });
      expect(usdToMicros(limitedRow.month_spend_usd)).toBe(1000n);
      // The key that read /v1/usage (its request is recorded too) has no limit of its own.
      expect(adminView.by_key.find((k: { key_id: string }) => k.key_id !== limited.id)).toMatchObject({ monthly_limit_usd: null, month_spend_usd: '0.000000' });
    });
  });
});

describe('key expiry on two replicas (issue 24)', () => {
  let one: TestApp, two: TestApp, admin: AdminClient;
  beforeAll(async () => {
    // One after the other: two migration runs at once would collide.
    one = await startTestApp();
    two = await startTestApp();
    admin = new AdminClient(one.url);
  });
  afterAll(async () => {
    await Promise.all([one?.close(), two?.close()]);
  });

  /** Milliseconds until both replicas refuse `key` with 401 invalid_api_key (polled every 50 ms, up to 5 s). */
  async function refusedOnBothWithin(key: string): Promise<number> {
    const started = Date.now();
    const refused = async (gw: TestApp) => {
      for (;;) {
        const err = await sdk(gw, key).models.list().then(() => null, (e) => e);
        if (err) return expect(err).toMatchObject({ status: 401, code: 'invalid_api_key' });
        if (Date.now() - started > 5000) throw new Error(`${gw.url} still serves the key`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await Promise.all([refused(one), refused(two)]);
    return Date.now() - started;
  }

  it('refuses a cached key on both replicas within 2 s of its expires_at, and within 2 s of a PATCH that expires it', async () => {
    const { accountId } = await admin.createAccount({ creditsUsd: '1' });
    const expiresAt = Date.now() + 1500;
    const timed = (await admin.request('POST', `/accounts/${accountId}/keys`, { expires_at: new Date(expiresAt).toISOString() })).body;
    await Promise.all([sdk(one, timed.key).models.list(), sdk(two, timed.key).models.list()]); // both cache it
    await new Promise((r) => setTimeout(r, expiresAt - Date.now()));
    expect(await refusedOnBothWithin(timed.key)).toBeLessThan(2000);

    const patched = (await admin.request('POST', `/accounts/${accountId}/keys`, {})).body;
    await Promise.all([sdk(one, patched.key).models.list(), sdk(two, patched.key).models.list()]);
    await admin.request('PATCH', `/keys/${patched.id}`, { expires_at: new Date(Date.now() - 1000).toISOString() });
    expect(await refusedOnBothWithin(patched.key)).toBeLessThan(2000);
  });
});
