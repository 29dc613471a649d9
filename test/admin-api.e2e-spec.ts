import { randomUUID } from 'node:crypto';
import { AdminClient } from './support/admin-client';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

const DAY_MS = 86_400_000;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function expectError(res: { status: number; body: any }, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error).toHaveProperty('param');
  expect(res.body.error).toHaveProperty('type');
}

describe('Admin API (/admin/v1)', () => {
  let gw: TestApp;
  let admin: AdminClient;

  beforeAll(async () => {
    gw = await startTestApp();
    admin = new AdminClient(gw.url);
  });
  afterAll(() => gw.close());

  async function newAccount(name = 'acme'): Promise<string> {
    const res = await admin.request('POST', '/accounts', { name });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  /** Every endpoint, with a valid body, for the 401 and 404 sweeps. */
  const endpoints = (accountId: string, keyId: string): Array<[string, string, unknown?]> => [
    ['POST', '/accounts', { name: 'x' }],
    ['GET', `/accounts/${accountId}`],
    ['POST', `/accounts/${accountId}/keys`, { name: 'k' }],
    ['GET', `/accounts/${accountId}/keys`],
    ['DELETE', `/keys/${keyId}`],
    ['POST', `/accounts/${accountId}/credits`, { amount_usd: 1 }],
    ['PUT', `/accounts/${accountId}/spending-limit`, { monthly_limit_usd: 5 }],
    ['PUT', `/accounts/${accountId}/subscription`, { status: 'active' }],
    ['GET', `/accounts/${accountId}/usage`],
  ];

  describe('authentication', () => {
    it('refuses every endpoint without the admin token, with a wrong one, or with an API key, and changes nothing', async () => {
      const { accountId, key, keyId } = await admin.createAccount();
      const callers = [
        new AdminClient(gw.url, ''),
        new AdminClient(gw.url, `${TEST_ADMIN_TOKEN}x`),
        new AdminClient(gw.url, TEST_ADMIN_TOKEN.slice(0, -1)),
        new AdminClient(gw.url, key),
      ];
      // Wrong tokens count towards the address's 10 tries a minute (docs/decisions.md, "Guessing"); no token does not.
      let wrongTokens = 0;
      for (const caller of callers) {
        for (const [method, path, body] of endpoints(accountId, keyId)) {
          const res = await caller.request(method, path, body);
          const throttled = caller !== callers[0] && ++wrongTokens > 10;
          expectError(res, throttled ? 429 : 401, throttled ? 'rate_limit_exceeded' : 'invalid_admin_token');
          expect(res.body.error.type).toBe(throttled ? 'rate_limit_error' : 'authentication_error');
        }
      }
      const account = await admin.account(accountId);
      expect(account.credits_usd).toBe('0.000000');
      expect(account.monthly_limit_usd).toBeNull();
      expect(account.subscription.status).toBe('none');
      const keys = await admin.request('GET', `/accounts/${accountId}/keys`);
      expect(keys.body.data).toHaveLength(1);
      expect(keys.body.data[0].revoked_at).toBeNull();
    });

    it.each([
      ['another scheme', `Basic ${TEST_ADMIN_TOKEN}`],
      ['no scheme', TEST_ADMIN_TOKEN],
    ])('refuses the right token sent with %s', async (_name, authorization) => {
      const res = await fetch(`${gw.url}/admin/v1/accounts`, { method: 'POST', headers: { authorization }, body: '{"name":"x"}' });
      expect(res.status).toBe(401);
      expect(((await res.json()) as any).error.code).toBe('invalid_admin_token');
    });
  });

  describe('404 not_found', () => {
    it('answers every id-taking endpoint with 404 for an unknown uuid and for a non-uuid id', async () => {
      const ids = [randomUUID(), 'not-a-uuid', '123'];
      for (const id of ids) {
        for (const [method, path, body] of endpoints(id, id).filter(([, p]) => p !== '/accounts')) {
          expectError(await admin.request(method, path, body), 404, 'not_found');
        }
      }
    });

    it('answers an unknown admin path with 404', async () => {
      expectError(await admin.request('GET', '/nothing'), 404, 'not_found');
    });
  });

  describe('POST /accounts', () => {
    it('creates an account with no credits, no limit and no subscription (201)', async () => {
      const res = await admin.request('POST', '/accounts', { name: 'Acme Ltd' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: 'Acme Ltd',
        credits_usd: '0.000000',
        reserved_usd: '0.000000',
        monthly_limit_usd: null,
        month_spend_usd: '0.000000',
        rpm: null,
        tpm: null,
        rate_limits: { rpm: null, tpm: null },
        low_credits_usd: null,
        subscription: { status: 'none', ends_at: null, trial_used: false },
        fair_use: { used: 0, allowance: gw.config.fair_use.monthly_requests, resets_at: expect.stringMatching(ISO) },
        created_at: expect.stringMatching(ISO),
      });
      const resetsAt = new Date(res.body.fair_use.resets_at);
      expect(resetsAt.getUTCDate()).toBe(1);
      expect(resetsAt.getUTCHours()).toBe(0);
      expect(resetsAt.getTime()).toBeGreaterThan(Date.now());
    });

    it.each([
      ['no name', {}],
      ['a number', { name: 42 }],
      ['an empty name', { name: '' }],
      ['a name over 200 characters', { name: 'n'.repeat(201) }],
      ['a name with a NUL character', { name: 'a\u0000b' }],
      ['an unknown field', { name: 'x', credits_usd: 100 }],
      ['an array body', [{ name: 'x' }]],
      ['a string body', 'x'],
      ['a null body', null],
    ])('refuses %s with 400', async (_name, body) => {
      expectError(await admin.request('POST', '/accounts', body), 400, 'invalid_request_error');
    });
  });

  describe('GET /accounts/:id', () => {
    it('shows the account', async () => {
      const id = await newAccount('shown');
      const res = await admin.request('GET', `/accounts/${id}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id, name: 'shown', credits_usd: '0.000000' });
    });
  });

  describe('keys', () => {
    it('creates a key shown once (201), lists keys without secrets, revokes one', async () => {
      const id = await newAccount();
      const created = await admin.request('POST', `/accounts/${id}/keys`, { name: 'backend' });
      expect(created.status).toBe(201);
      // The key's controls (DESIGN.md section 10) come with it: none set, nothing spent yet.
      const controls = { monthly_limit_usd: null, month_spend_usd: '0.000000', expires_at: null, models: null, rpm: null, tpm: null, rate_limits: { rpm: null, tpm: null }, replaced_by: null };
      expect(created.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        key: expect.stringMatching(/^gwk_[0-9A-Za-z]{49}$/),
        created_at: expect.stringMatching(ISO),
        name: 'backend',
        prefix: created.body.key.slice(0, 10),
        revoked_at: null,
        ...controls,
      });
      const unnamed = await admin.request('POST', `/accounts/${id}/keys`, {});
      expect(unnamed.status).toBe(201);

      const listed = await admin.request('GET', `/accounts/${id}/keys`);
      expect(listed.status).toBe(200);
      expect(listed.body).toEqual({
        object: 'list',
        data: [
          { id: created.body.id, name: 'backend', prefix: created.body.key.slice(0, 10), created_at: created.body.created_at, revoked_at: null, ...controls },
          { id: unnamed.body.id, name: null, prefix: unnamed.body.key.slice(0, 10), created_at: expect.stringMatching(ISO), revoked_at: null, ...controls },
        ],
      });
      const text = JSON.stringify(listed.body);
      expect(text).not.toContain(created.body.key);
      expect(text).not.toContain(created.body.key.slice(10, 30));

      const revoked = await admin.request('DELETE', `/keys/${created.body.id}`);
      expect(revoked.status).toBe(200);
      expect(revoked.body).toMatchObject({ id: created.body.id, name: 'backend', revoked_at: expect.stringMatching(ISO) });
      const again = await admin.request('DELETE', `/keys/${created.body.id}`);
      expect(again.status).toBe(200);
      expect(again.body.revoked_at).toBe(revoked.body.revoked_at);

      const after = await admin.request('GET', `/accounts/${id}/keys`);
      expect(after.body.data.map((k: any) => k.revoked_at !== null)).toEqual([true, false]);
    });

    it('lists only the account\'s own keys', async () => {
      const a = await admin.createAccount();
      const b = await admin.createAccount();
      const listed = await admin.request('GET', `/accounts/${a.accountId}/keys`);
      expect(listed.body.data.map((k: any) => k.id)).toEqual([a.keyId]);
      expect(listed.body.data.map((k: any) => k.id)).not.toContain(b.keyId);
    });

    it.each([
      ['a numeric name', { name: 7 }],
      ['a name with a NUL character', { name: 'a\u0000b' }],
      ['an unknown field', { name: 'k', scopes: ['chat'] }],
    ])('refuses %s with 400', async (_name, body) => {
      const id = await newAccount();
      expectError(await admin.request('POST', `/accounts/${id}/keys`, body), 400, 'invalid_request_error');
      expect((await admin.request('GET', `/accounts/${id}/keys`)).body.data).toEqual([]);
    });
  });

  describe('POST /accounts/:id/credits', () => {
    it('tops up and returns the account (200), as a number or a decimal string', async () => {
      const id = await newAccount();
      const first = await admin.request('POST', `/accounts/${id}/credits`, { amount_usd: 2.5 });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ id, credits_usd: '2.500000' });
      const second = await admin.request('POST', `/accounts/${id}/credits`, { amount_usd: '0.25' });
      expect(second.body.credits_usd).toBe('2.750000');
    });

    it.each([
      ['a negative amount', { amount_usd: -1 }],
      ['a negative string', { amount_usd: '-1.00' }],
      ['zero', { amount_usd: 0 }],
      ['seven decimals', { amount_usd: 0.0000001 }],
      ['seven decimals as a string', { amount_usd: '1.0000001' }],
      ['an exponent string', { amount_usd: '1e3' }],
      ['a non-numeric string', { amount_usd: 'ten' }],
      ['a boolean', { amount_usd: true }],
      ['null', { amount_usd: null }],
      ['an object', { amount_usd: { usd: 1 } }],
      ['Infinity as a string', { amount_usd: 'Infinity' }],
      ['more than 12 integer digits', { amount_usd: '1000000000000' }],
      ['a missing amount', {}],
      ['an unknown field', { amount_usd: 1, note: 'gift' }],
    ])('refuses %s with 400 and credits nothing', async (_name, body) => {
      const id = await newAccount();
      const res = await admin.request('POST', `/accounts/${id}/credits`, body);
      expectError(res, 400, 'invalid_request_error');
      expect((await admin.account(id)).credits_usd).toBe('0.000000');
    });
  });

  describe('PUT /accounts/:id/spending-limit', () => {
    it('sets, changes to zero and clears the monthly limit (200)', async () => {
      const id = await newAccount();
      const set = await admin.request('PUT', `/accounts/${id}/spending-limit`, { monthly_limit_usd: 12.5 });
      expect(set.status).toBe(200);
      expect(set.body).toMatchObject({ id, monthly_limit_usd: '12.500000' });
      const zero = await admin.request('PUT', `/accounts/${id}/spending-limit`, { monthly_limit_usd: '0' });
      expect(zero.body.monthly_limit_usd).toBe('0.000000');
      const cleared = await admin.request('PUT', `/accounts/${id}/spending-limit`, { monthly_limit_usd: null });
      expect(cleared.status).toBe(200);
      expect(cleared.body.monthly_limit_usd).toBeNull();
    });

    it.each([
      ['a negative limit', { monthly_limit_usd: -5 }],
      ['seven decimals', { monthly_limit_usd: '0.1234567' }],
      ['a non-numeric string', { monthly_limit_usd: 'unlimited' }],
      ['a missing limit', {}],
      ['an unknown field', { monthly_limit_usd: 5, currency: 'EUR' }],
    ])('refuses %s with 400 and keeps the limit', async (_name, body) => {
      const id = await newAccount();
      await admin.request('PUT', `/accounts/${id}/spending-limit`, { monthly_limit_usd: 3 });
      expectError(await admin.request('PUT', `/accounts/${id}/spending-limit`, body), 400, 'invalid_request_error');
      expect((await admin.account(id)).monthly_limit_usd).toBe('3.000000');
    });
  });

  describe('PUT /accounts/:id/subscription', () => {
    it('starts a 14-day trial, once per account', async () => {
      const id = await newAccount();
      const before = Date.now();
      const trial = await admin.request('PUT', `/accounts/${id}/subscription`, { status: 'trial' });
      expect(trial.status).toBe(200);
      expect(trial.body.subscription).toMatchObject({ status: 'trial', trial_used: true });
      const endsAt = new Date(trial.body.subscription.ends_at).getTime();
      expect(endsAt).toBeGreaterThanOrEqual(before + 14 * DAY_MS - 1000);
      expect(endsAt).toBeLessThanOrEqual(Date.now() + 14 * DAY_MS + 1000);

      await admin.request('PUT', `/accounts/${id}/subscription`, { status: 'none' });
      const second = await admin.request('PUT', `/accounts/${id}/subscription`, { status: 'trial' });
      expectError(second, 409, 'invalid_request_error');
      expect(second.body.error.param).toBe('status');
      expect((await admin.account(id)).subscription).toEqual({ status: 'none', ends_at: null, trial_used: true });
    });

    it('takes a trial end date when given one', async () => {
      const id = await newAccount();
      const endsAt = new Date(Date.now() + 3 * DAY_MS).toISOString();
      const res = await admin.request('PUT', `/accounts/${id}/subscription`, { status: 'trial', ends_at: endsAt });
      expect(res.body.subscription).toEqual({ status: 'trial', ends_at: endsAt, trial_used: true });
    });

    it('sets an active subscription, open-ended or with an end date, and ends it with none', async () => {
      const id = await newAccount();
      const open = await admin.request('PUT', `/accounts/${id}/subscription`, { status: 'active' });
      expect(open.status).toBe(200);
      expect(open.body.subscription).toEqual({ status: 'active', ends_at: null, trial_used: false });
      const endsAt = '2031-01-31T00:00:00.000Z';
      const dated = await admin.request('PUT', `/accounts/${id}/subscription`, { status: 'active', ends_at: endsAt });
      expect(dated.body.subscription).toEqual({ status: 'active', ends_at: endsAt, trial_used: false });
      const none = await admin.request('PUT', `/accounts/${id}/subscription`, { status: 'none' });
      expect(none.body.subscription).toEqual({ status: 'none', ends_at: null, trial_used: false });
    });

    it.each([
      ['an unknown status', { status: 'gold' }],
      ['a missing status', {}],
      ['a date that is not ISO 8601', { status: 'active', ends_at: 'next tuesday' }],
      ['an impossible date', { status: 'active', ends_at: '2030-02-30T00:00:00Z' }],
      ['a numeric date', { status: 'active', ends_at: 1_900_000_000 }],
      ['an unknown field', { status: 'active', plan: 'pro' }],
    ])('refuses %s with 400 and changes nothing', async (_name, body) => {
      const id = await newAccount();
      expectError(await admin.request('PUT', `/accounts/${id}/subscription`, body), 400, 'invalid_request_error');
      expect((await admin.account(id)).subscription.status).toBe('none');
    });
  });

  describe('GET /accounts/:id/usage', () => {
    it('is empty for a new account, with the current month as default period', async () => {
      const id = await newAccount();
      const res = await admin.request('GET', `/accounts/${id}/usage`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        account_id: id,
        totals: { requests: 0, prompt_tokens: 0, completion_tokens: 0, audio_seconds: 0, input_chars: 0, cost_usd: '0.000000' },
        by_key: [],
        by_model: [],
        latest: [],
      });
      const from = new Date(res.body.from);
      expect(from.getUTCDate()).toBe(1);
      expect(from.getUTCHours()).toBe(0);
    });

    it('counts the authenticated requests of each key from the usage records', async () => {
      const { accountId, key, keyId } = await admin.createAccount();
      const other = await admin.request('POST', `/accounts/${accountId}/keys`, { name: 'second' });
      const call = (k: string) => fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${k}` } }).then((r) => r.status);
      expect([await call(key), await call(key), await call(other.body.key)]).toEqual([200, 200, 200]);

      // Records are written when each response closes.
      let usage: any;
      for (let i = 0; i < 50; i++) {
        usage = (await admin.request('GET', `/accounts/${accountId}/usage`)).body;
        if (usage.totals.requests === 3) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(usage.totals.requests).toBe(3);
      const byKey = Object.fromEntries(usage.by_key.map((k: any) => [k.key_id, k.requests]));
      expect(byKey).toEqual({ [keyId]: 2, [other.body.id]: 1 });
      expect(usage.by_model).toEqual([expect.objectContaining({ model: null, requests: 3, cost_usd: '0.000000' })]);
      expect(usage.latest).toHaveLength(3);
      expect(usage.latest[0]).toMatchObject({ endpoint: '/v1/models', status: 200, error_code: null, request_id: expect.stringMatching(/^req_/) });

      const past = await admin.request('GET', `/accounts/${accountId}/usage?from=2020-01-01&to=2020-01-31`);
      expect(past.status).toBe(200);
      expect(past.body.totals.requests).toBe(0);
      expect(past.body.to).toBe('2020-02-01T00:00:00.000Z');
    });

    it.each([
      ['a from that is not a date', '?from=yesterday'],
      ['a to before from', '?from=2025-02-01&to=2025-01-01'],
      ['an unknown query parameter', '?account=all'],
    ])('refuses %s with 400', async (_name, query) => {
      const id = await newAccount();
      expectError(await admin.request('GET', `/accounts/${id}/usage${query}`), 400, 'invalid_request_error');
    });
  });
});
