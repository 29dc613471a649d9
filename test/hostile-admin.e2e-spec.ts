import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { postChat, sdk, waitForUsageRows } from './support/chat-support';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

/**
 * Issue 14, the admin API and the dashboard (item 2) and junk model ids (item 5): every bad input is
 * a 400 naming its field, never a 500 and never an error in the log; a refused request's model is
 * recorded storable and short, and ids outside the catalog make one row of the per-model table.
 */

const NUL = 'a\u0000b';
const LONE_HIGH = 'a\ud800b';
const LONE_LOW = '\udc00b';
const UNSTORABLE = [NUL, LONE_HIGH, LONE_LOW];
// ISO 8601 forms JavaScript cannot read (500 before issue 14), or that parsers read differently: all refused.
const NOT_OUR_DATES = [
  '2026-W05',
  '2026-W05-1',
  '20261123',
  '2026-327',
  '20261123T100000Z',
  '2026-11-23T10:00:00',
  '2026-11-23 10:00:00Z',
  '2026-11-23T10:00:00+0100',
  '2026-11-23T10:00:00.5z',
  '+002026-11-23T00:00:00Z',
  '0000-01-01',
  '2026-02-29',
  '2026-11-23T24:00:00Z',
  '2026-11-23T10:00:00+24:00',
  '2026-11',
  '2026',
  '',
  `2026-11-23${'\u0000'}`,
];
const BAD_AMOUNTS: unknown[] = [
  '9223372036854.775808',
  '1000000000000',
  9007199254740993,
  1e21,
  -1,
  '-1',
  '1e3',
  '0x10',
  'NaN',
  '1.0000001',
  `1${'\u0000'}`,
  {},
  [],
  [1],
  true,
  { constructor: 1 },
];
const NON_OBJECT_BODIES = ['null', '[]', '[{"name":"x"}]', '"name"', '""', '1', '-0.5', 'true', 'false'];

interface Answer {
  status: number;
  body: any;
}

function expect400(res: Answer, param: string | null, code = 'invalid_request_error'): void {
  expect({ status: res.status, code: res.body?.error?.code, param: res.body?.error?.param, type: res.body?.error?.type }).toEqual({
    status: 400,
    code,
    param,
    type: 'invalid_request_error',
  });
  expect(typeof res.body.error.message).toBe('string');
}

describe('Hostile input: admin API, dashboard API and recorded model ids', () => {
  let gw: TestApp;
  let admin: AdminClient;
  let db: DataSource;
  let errorsLogged: jest.SpyInstance;

  beforeAll(async () => {
    gw = await startTestApp();
    admin = new AdminClient(gw.url);
    db = gw.app.get(DataSource);
    errorsLogged = jest.spyOn(Logger.prototype, 'error');
  });
  afterEach(() => {
    // A 500 (or a usage record that failed to write) logs at error level: none may have.
    const logged = errorsLogged.mock.calls.map((c) => String(c[c.length - 1]));
    errorsLogged.mockClear();
    expect(logged).toEqual([]);
  });
  afterAll(async () => {
    errorsLogged.mockRestore();
    await gw.close();
  });

  async function raw(method: string, path: string, body?: string): Promise<Answer> {
    const res = await fetch(`${gw.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  async function newAccount(): Promise<string> {
    const res = await admin.request('POST', '/accounts', { name: 'hostile' });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  describe('bodies that are not JSON objects', () => {
    const bodyRoutes = (accountId: string): Array<[string, string]> => [
      ['POST', '/admin/v1/accounts'],
      ['POST', `/admin/v1/accounts/${accountId}/keys`],
      ['POST', `/admin/v1/accounts/${accountId}/credits`],
      ['PUT', `/admin/v1/accounts/${accountId}/spending-limit`],
      ['PUT', `/admin/v1/accounts/${accountId}/subscription`],
    ];

    it.each(NON_OBJECT_BODIES)('refuses %s on every admin body route with 400 invalid_request_error, changing nothing', async (body) => {
      const accountId = await newAccount();
      const before = await admin.account(accountId);
      const accounts = await db.query(`SELECT count(*)::int AS n FROM accounts`);
      for (const [method, path] of bodyRoutes(accountId)) {
        const res = await raw(method, path, body);
        expect400(res, null);
        expect(res.body.error.message).toContain('JSON object');
      }
      expect(await admin.account(accountId)).toEqual(before);
      expect((await admin.request('GET', `/accounts/${accountId}/keys`)).body.data).toEqual([]);
      expect(await db.query(`SELECT count(*)::int AS n FROM accounts`)).toEqual(accounts);
    });
  });

  describe('deeply nested values', () => {
    it('refuses 5,000-deep arrays in every field of every admin body route with 400, never a stack overflow', async () => {
      const accountId = await newAccount();
      const deep = `${'['.repeat(5_000)}"x"${']'.repeat(5_000)}`;
      for (const [method, path, field] of [
        ['POST', '/admin/v1/accounts', 'name'],
        ['POST', `/admin/v1/accounts/${accountId}/keys`, 'name'],
        ['POST', `/admin/v1/accounts/${accountId}/credits`, 'amount_usd'],
        ['PUT', `/admin/v1/accounts/${accountId}/spending-limit`, 'monthly_limit_usd'],
        ['PUT', `/admin/v1/accounts/${accountId}/subscription`, 'ends_at'],
      ]) {
        const res = await raw(method, path, `{"${field}":${deep}}`);
        expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 400, code: 'invalid_request_error' });
      }
      expect(await admin.account(accountId)).toMatchObject({ credits_usd: '0.000000', monthly_limit_usd: null, subscription: { status: 'none' } });
    });
  });

  describe('strings PostgreSQL or a log would not hold as sent', () => {
    it.each(UNSTORABLE.map((s) => [JSON.stringify(s), s]))('refuses an account name %s with 400 naming name', async (_label, name) => {
      const before = await db.query(`SELECT count(*)::int AS n FROM accounts`);
      expect400(await admin.request('POST', '/accounts', { name }), 'name');
      expect(await db.query(`SELECT count(*)::int AS n FROM accounts`)).toEqual(before);
    });

    it.each(UNSTORABLE.map((s) => [JSON.stringify(s), s]))('refuses a key name %s with 400 naming name', async (_label, name) => {
      const accountId = await newAccount();
      expect400(await admin.request('POST', `/accounts/${accountId}/keys`, { name }), 'name');
      expect((await admin.request('GET', `/accounts/${accountId}/keys`)).body.data).toEqual([]);
    });

    it.each<[string, unknown]>([
      ['too long', 'x'.repeat(201)],
      ['a number', 5],
      ['an object', { toString: 'x' }],
      ['an array', ['x']],
      ['nested arrays', [[[['x']]]]],
      ['empty', ''],
    ])('refuses an account or key name that is %s with 400 naming name', async (_label, name) => {
      const accountId = await newAccount();
      expect400(await admin.request('POST', '/accounts', { name }), 'name');
      if (name !== '') expect400(await admin.request('POST', `/accounts/${accountId}/keys`, { name }), 'name');
    });

    it('keeps names with any other Unicode (astral characters, RTL, control characters but NUL) as sent', async () => {
      const name = '😀 Ünïcødé עברית \u0001\t200'.padEnd(200, '𝄞').slice(0, 200);
      const created = await admin.request('POST', '/accounts', { name });
      expect(created.status).toBe(201);
      expect(created.body.name).toBe(name);
      const key = await admin.request('POST', `/accounts/${created.body.id}/keys`, { name });
      expect(key.status).toBe(201);
      expect((await admin.request('GET', `/accounts/${created.body.id}/keys`)).body.data[0].name).toBe(name);
    });

    it.each([
      ['a NUL', 'q=%00'],
      ['a NUL inside text', 'q=ab%00cd'],
      ['too long a query', `q=${'x'.repeat(201)}`],
      ['two of them', 'q=a&q=b'],
      ['a bracketed name (taken literally)', 'q[a]=b'],
      ['an unknown parameter', 'q=a&limit=5'],
    ])('refuses a dashboard account search with %s with 400 naming the parameter', async (_label, query) => {
      const res = await raw('GET', `/dashboard/api/accounts?${query}`);
      expect400(res, query.startsWith('q=') ? (query.includes('limit') ? 'limit' : 'q') : query.split('=')[0]);
    });

    it('still finds accounts by any storable text, including undecodable percent-escapes taken literally', async () => {
      const name = `find-me-${Date.now()}-😀`;
      const id = (await admin.request('POST', '/accounts', { name })).body.id;
      const found = await raw('GET', `/dashboard/api/accounts?q=${encodeURIComponent(name)}`);
      expect(found.status).toBe(200);
      expect(found.body.map((a: any) => a.id)).toEqual([id]);
      for (const q of ['%ED%A0%80', '%C0%80', '%']) expect((await raw('GET', `/dashboard/api/accounts?q=${q}`)).status).toBe(200);
    });
  });

  describe('dates: YYYY-MM-DD or an RFC 3339 timestamp with its time zone', () => {
    it.each(NOT_OUR_DATES)('refuses ends_at %j with 400 naming ends_at, changing nothing', async (endsAt) => {
      const accountId = await newAccount();
      expect400(await admin.request('PUT', `/accounts/${accountId}/subscription`, { status: 'active', ends_at: endsAt }), 'ends_at');
      expect((await admin.account(accountId)).subscription).toEqual({ status: 'none', ends_at: null, trial_used: false });
    });

    it.each([
      ['2026-11-23', '2026-11-23T00:00:00.000Z'],
      ['2028-02-29', '2028-02-29T00:00:00.000Z'],
      ['2026-11-23T10:00Z', '2026-11-23T10:00:00.000Z'],
      ['2026-11-23T10:00:00+05:30', '2026-11-23T04:30:00.000Z'],
      ['2026-11-23T10:00:00.123456789-01:00', '2026-11-23T11:00:00.123Z'],
      ['9999-12-31T23:59:59Z', '9999-12-31T23:59:59.000Z'],
      ['0001-01-01', '0001-01-01T00:00:00.000Z'],
    ])('accepts ends_at %s as %s', async (endsAt, stored) => {
      const accountId = await newAccount();
      const res = await admin.request('PUT', `/accounts/${accountId}/subscription`, { status: 'active', ends_at: endsAt });
      expect(res.status).toBe(200);
      expect(res.body.subscription.ends_at).toBe(stored);
    });

    it('refuses each bad from and to on the admin usage API and /v1/usage, naming it; the refusals are recorded in usage', async () => {
      const { accountId, key } = await admin.createAccount({ name: 'hostile-dates' });
      const queries: Array<[string, string]> = [
        ...NOT_OUR_DATES.flatMap((d): Array<[string, string]> => [
          [`from=${encodeURIComponent(d)}`, 'from'],
          [`to=${encodeURIComponent(d)}`, 'to'],
        ]),
        ['from=2026-01-01&from=2026-02-01', 'from'],
        ['to[gt]=2026-01-01', 'to[gt]'],
        ['constructor=2026-01-01', 'constructor'],
        ['__proto__=2026-01-01', '__proto__'],
        ['to=2026-01-01&from=2026-02-01', 'to'],
      ];
      for (const [query, param] of queries) {
        expect400(await admin.request('GET', `/accounts/${accountId}/usage?${query}`), param);
        const own = await fetch(`${gw.url}/v1/usage?${query}`, { headers: { authorization: `Bearer ${key}` } });
        expect400({ status: own.status, body: await own.json() }, param);
      }
      const rows = await waitForUsageRows(db, accountId, queries.length);
      expect(rows).toHaveLength(queries.length);
      expect(rows.every((r) => r.endpoint === '/v1/usage' && r.status === 400 && r.error_code === 'invalid_request_error')).toBe(true);
    });
  });

  describe('amounts', () => {
    it.each(BAD_AMOUNTS.map((a) => [JSON.stringify(a), a]))(
      'refuses %s as a top-up and as a spending limit with 400 naming the field, changing nothing',
      async (_label, amount) => {
        const accountId = await newAccount();
        expect400(await admin.request('POST', `/accounts/${accountId}/credits`, { amount_usd: amount }), 'amount_usd');
        expect400(await admin.request('PUT', `/accounts/${accountId}/spending-limit`, { monthly_limit_usd: amount }), 'monthly_limit_usd');
        expect(await admin.account(accountId)).toMatchObject({ credits_usd: '0.000000', monthly_limit_usd: null });
      },
    );

    it('takes the largest amounts that fit the bigint columns, and refuses a top-up past the largest balance with 400', async () => {
      const accountId = await newAccount();
      const largest = '999999999999.999999';
      const limit = await admin.request('PUT', `/accounts/${accountId}/spending-limit`, { monthly_limit_usd: largest });
      expect(limit.body.monthly_limit_usd).toBe(largest);
      // 9 × (10^18 − 1) micro-USD fits a bigint (≤ 9,223,372,036,854,775,807); a 10th does not.
      for (let i = 0; i < 9; i++) expect((await admin.request('POST', `/accounts/${accountId}/credits`, { amount_usd: largest })).status).toBe(200);
      expect400(await admin.request('POST', `/accounts/${accountId}/credits`, { amount_usd: largest }), 'amount_usd');
      expect((await admin.account(accountId)).credits_usd).toBe('8999999999999.999991');
    });
  });

  describe('fields the DTOs do not know', () => {
    it.each([
      ['constructor', { name: 'x', constructor: 1 }],
      ['prototype', { name: 'x', prototype: {} }],
      ['toString', { name: 'x', toString: 'y' }],
      ['hasOwnProperty', { name: 'x', hasOwnProperty: null }],
      ['valueOf', { name: 'x', valueOf: { x: 1 } }],
    ])('refuses a body with %s with 400 naming it, creating nothing', async (field, body) => {
      const before = await db.query(`SELECT count(*)::int AS n FROM accounts`);
      expect400(await admin.request('POST', '/accounts', body), field);
      expect(await db.query(`SELECT count(*)::int AS n FROM accounts`)).toEqual(before);
    });

    it('refuses a __proto__ key with 400 naming it, on every body route and the dashboard search, polluting nothing', async () => {
      const accountId = await newAccount();
      const proto = '"__proto__":{"isAdmin":true,"status":"active","amount_usd":5}';
      for (const [method, path, body] of [
        ['POST', '/admin/v1/accounts', `{"name":"proto",${proto}}`],
        ['POST', `/admin/v1/accounts/${accountId}/keys`, `{${proto}}`],
        ['POST', `/admin/v1/accounts/${accountId}/credits`, `{"amount_usd":1,${proto}}`],
        ['PUT', `/admin/v1/accounts/${accountId}/spending-limit`, `{"monthly_limit_usd":1,${proto}}`],
        ['PUT', `/admin/v1/accounts/${accountId}/subscription`, `{${proto}}`],
      ]) {
        expect400(await raw(method, path, body), '__proto__');
      }
      expect400(await raw('GET', '/dashboard/api/accounts?__proto__=x'), '__proto__');
      expect(({} as any).isAdmin).toBeUndefined();
      expect(await admin.account(accountId)).toMatchObject({ credits_usd: '0.000000', monthly_limit_usd: null, subscription: { status: 'none' } });
    });
  });

  describe('many keys, under the JSON key limit', () => {
    // 99,000 keys (about 1 MB): under limits.json_body_max_keys, so the body guard lets them through to
    // the DTO validation, which must not take time quadratic in them (4–9 s each before).
    const manyKeys = (prefix: string) => `{${Array.from({ length: 99_000 }, (_, i) => `"${prefix}${i}":1`).join(',')}}`;

    it('answers 400 within 1 s for unknown keys at top level and for an object of keys in a field, on every body route', async () => {
      const accountId = await newAccount();
      const top = manyKeys('k');
      for (const [method, path, field] of [
        ['POST', '/admin/v1/accounts', 'name'],
        ['POST', `/admin/v1/accounts/${accountId}/keys`, 'name'],
        ['POST', `/admin/v1/accounts/${accountId}/credits`, 'amount_usd'],
        ['PUT', `/admin/v1/accounts/${accountId}/spending-limit`, 'monthly_limit_usd'],
        ['PUT', `/admin/v1/accounts/${accountId}/subscription`, 'status'],
      ]) {
        for (const body of [top, `{"${field}":${top}}`]) {
          const started = Date.now();
          const res = await raw(method, path, body);
          expect({ status: res.status, code: res.body.error.code }).toEqual({ status: 400, code: 'invalid_request_error' });
          expect(Date.now() - started).toBeLessThan(1000);
        }
      }
      expect(await admin.account(accountId)).toMatchObject({ credits_usd: '0.000000', monthly_limit_usd: null, subscription: { status: 'none' } });
    });
  });

  describe('model ids of refused requests', () => {
    /** Refused chat requests counted in the metrics, whatever their code. */
    const refusedChats = async (): Promise<number> => {
      const text = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } })).text();
      const lines = text.split('\n').filter((l) => l.startsWith('gateway_requests_total{endpoint="/v1/chat/completions",status="400"'));
      return lines.reduce((n, l) => n + Number(l.split(' ').pop()), 0);
    };

    it('records a model with NUL, lone surrogates or 10,000 characters storable and cut to 64 units, and counts it in metrics', async () => {
      const { accountId, key } = await admin.createAccount({ name: 'hostile-models', creditsUsd: '1' });
      const sent = [
        ['nul\u0000model', 'nul\uFFFDmodel'],
        ['high\ud800', 'high\uFFFD'],
        ['\udc00low', '\uFFFDlow'],
        ['m'.repeat(10_000), 'm'.repeat(64)],
        [`${'x'.repeat(63)}😀tail`, 'x'.repeat(63)],
        [`${'\u0000'.repeat(5_000)}${'\ud800'.repeat(5_000)}`, '\uFFFD'.repeat(64)],
      ];
      const before = await refusedChats();
      for (const [model] of sent) {
        const res = await postChat(gw, key, { model, messages: [{ role: 'user', content: 'x' }] });
        expect(res.status).toBe(400);
        const error = ((await res.json()) as any).error;
        expect(error).toMatchObject({ code: expect.stringMatching(/^(unknown_model|invalid_request_error)$/), param: 'model' });
        // The message quotes the id cut short and storable, never the whole of what was sent.
        expect(error.message.length).toBeLessThan(200);
        expect(error.message).not.toMatch(/[\u0000\ud800-\udfff]/);
      }
      const rows = await waitForUsageRows(db, accountId, sent.length);
      // Refused requests are recorded as their responses close, not necessarily in order.
      expect(rows.map((r) => r.model).sort()).toEqual(sent.map(([, stored]) => stored).sort());
      expect(rows.every((r) => r.status === 400 && r.error_code !== null && r.cost_micros === '0')).toBe(true);
      expect(await refusedChats()).toBe(before + sent.length);
    });

    it('shows every id outside the catalog as one row of the per-model table (admin usage API and /v1/usage); the latest requests keep the ids', async () => {
      const { accountId, key } = await admin.createAccount({ name: 'hostile-table', creditsUsd: '1' });
      await sdk(gw, key).chat.completions.create({ model: 'dev-echo', messages: [{ role: 'user', content: 'hello' }] });
      const junk = ['no-such-model', '<script>alert(1)</script>', 'z'.repeat(500), 'nul\u0000', ...Array.from({ length: 20 }, (_, i) => `junk-${i}`)];
      for (const model of junk) expect((await postChat(gw, key, { model, messages: [{ role: 'user', content: 'x' }] })).status).toBe(400);
      expect((await postChat(gw, key, { messages: [{ role: 'user', content: 'x' }] })).status).toBe(400);
      await waitForUsageRows(db, accountId, junk.length + 2);

      const viaAdmin = await admin.usage(accountId);
      const own = await fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } });
      const viaKey = (await own.json()) as any;
      expect(viaKey.by_model).toEqual(viaAdmin.by_model);
      const zero = {
        prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, audio_input_tokens: 0,
        audio_output_tokens: 0, audio_seconds: 0, input_chars: 0, cost_usd: '0.000000',
      };
      expect(viaAdmin.by_model).toEqual([
        expect.objectContaining({ model: 'dev-echo', unknown: false, requests: 1 }),
        { model: null, unknown: false, requests: 1, ...zero },
        { model: null, unknown: true, requests: junk.length, ...zero },
      ]);
      const latestModels = viaAdmin.latest.map((r: any) => r.model);
      expect(latestModels).toEqual(expect.arrayContaining(['no-such-model', '<script>alert(1)</script>', 'z'.repeat(64), 'nul\uFFFD', 'junk-19']));
    });
  });
});
