import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

/**
 * The audit of who did what in the admin API (issue 48, DESIGN.md 12.5): each admin action that succeeded writes one
 * row (actor `admin`, action, account, key, request id, the body's fields), a refused one none, no key's secret ever;
 * GET /admin/v1/audit lists them newest first, by account, page by page. Real PostgreSQL.
 */
jest.setTimeout(60_000);

interface Sent {
  status: number;
  body: any;
  requestId: string;
}

interface AuditRow {
  id: string;
  actor: string;
  action: string;
  account_id: string | null;
  key_id: string | null;
  request_id: string;
  details: Record<string, unknown>;
}

describe('admin audit', () => {
  let gw: TestApp;
  let admin: AdminClient;
  let db: DataSource;

  beforeAll(async () => {
    gw = await startTestApp();
    admin = new AdminClient(gw.url);
    db = gw.app.get(DataSource);
  });
  afterAll(() => gw.close());

  /** An admin request, with the gateway's request id of its answer. */
  async function send(method: string, path: string, body?: unknown, token = TEST_ADMIN_TOKEN): Promise<Sent> {
    const res = await fetch(`${gw.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, requestId: res.headers.get('x-request-id')! };
  }

  const rowsOf = (requestId: string): Promise<AuditRow[]> =>
    db.query(`SELECT id::text, actor, action, account_id, key_id, request_id, details FROM admin_audit WHERE request_id = $1`, [requestId]);
  const countAll = async (): Promise<number> => (await db.query(`SELECT count(*)::int AS n FROM admin_audit`))[0].n;

  /** Sends an action that must succeed and returns its one audit row. */
  async function act(method: string, path: string, body: unknown, status: number): Promise<{ sent: Sent; row: AuditRow }> {
    const before = await countAll();
    const sent = await send(method, path, body);
    expect({ status: sent.status, body: sent.body }).toEqual({ status, body: expect.anything() });
    const rows = await rowsOf(sent.requestId);
    expect(rows).toHaveLength(1);
    expect(await countAll()).toBe(before + 1);
    expect(rows[0]).toMatchObject({ actor: 'admin', request_id: sent.requestId });
    return { sent, row: rows[0] };
  }

  it('writes one row per action that succeeded, with its action, account, key and the body', async () => {
    const created = await act('POST', '/accounts', { name: 'audited' }, 201);
    const accountId = created.sent.body.id;
    expect(created.row).toMatchObject({ action: 'account.create', account_id: accountId, key_id: null, details: { name: 'audited' } });

    const updated = await act('PATCH', `/accounts/${accountId}`, { rpm: 120, low_credits_usd: '1.5' }, 200);
    expect(updated.row).toMatchObject({ action: 'account.update', account_id: accountId, key_id: null, details: { rpm: 120, low_credits_usd: '1.5' } });

    const credits = await act('POST', `/accounts/${accountId}/credits`, { amount_usd: '10.25' }, 200);
    expect(credits.sent.body.credits_usd).toBe('10.250000');
    expect(credits.row).toMatchObject({ action: 'account.credits', account_id: accountId, key_id: null, details: { amount_usd: '10.25' } });

    const limit = await act('PUT', `/accounts/${accountId}/spending-limit`, { monthly_limit_usd: null }, 200);
    expect(limit.row).toMatchObject({ action: 'account.spending_limit', account_id: accountId, details: { monthly_limit_usd: null } });

    const subscription = await act('PUT', `/accounts/${accountId}/subscription`, { status: 'active', ends_at: '2099-01-01' }, 200);
    expect(subscription.row).toMatchObject({ action: 'account.subscription', account_id: accountId, details: { status: 'active', ends_at: '2099-01-01' } });

    const key = await act('POST', `/accounts/${accountId}/keys`, { name: 'ci', monthly_limit_usd: 5, rpm: 30 }, 201);
    const keyId = key.sent.body.id;
    expect(key.row).toEqual({
      id: expect.any(String),
      actor: 'admin',
      action: 'key.create',
      account_id: accountId,
      key_id: keyId,
      request_id: key.sent.requestId,
      details: { name: 'ci', monthly_limit_usd: 5, rpm: 30 },
    });

    const keyUpdate = await act('PATCH', `/keys/${keyId}`, { name: 'ci-2', expires_at: null }, 200);
    expect(keyUpdate.row).toMatchObject({ action: 'key.update', account_id: accountId, key_id: keyId, details: { name: 'ci-2', expires_at: null } });

    const rotated = await act('POST', `/keys/${keyId}/rotate`, { grace_s: 60 }, 201);
    const newKeyId = rotated.sent.body.id;
    expect(newKeyId).not.toBe(keyId);
    expect(rotated.row).toMatchObject({ action: 'key.rotate', account_id: accountId, key_id: newKeyId, details: { grace_s: 60, replaced_key_id: keyId } });

    const revoked = await act('DELETE', `/keys/${newKeyId}`, undefined, 200);
    expect(revoked.row).toMatchObject({ action: 'key.revoke', account_id: accountId, key_id: newKeyId, details: {} });

    // The list of the account is these nine, newest first.
    const listed = await send('GET', `/audit?account_id=${accountId}`);
    expect(listed.status).toBe(200);
    expect(listed.body.object).toBe('list');
    expect(listed.body.has_more).toBe(false);
    expect(listed.body.data.map((r: AuditRow) => r.action)).toEqual([
      'key.revoke',
      'key.rotate',
      'key.update',
      'key.create',
      'account.subscription',
      'account.spending_limit',
      'account.credits',
      'account.update',
      'account.create',
    ]);
    expect(listed.body.data[1]).toEqual({
      id: rotated.row.id,
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      actor: 'admin',
      action: 'key.rotate',
      account_id: accountId,
      key_id: newKeyId,
      request_id: rotated.sent.requestId,
      details: { grace_s: 60, replaced_key_id: keyId },
    });

    // No secret anywhere: neither the created nor the rotated key, whole or past its displayed prefix.
    const table = JSON.stringify(await db.query(`SELECT * FROM admin_audit`));
    for (const secret of [key.sent.body.key, rotated.sent.body.key]) {
      expect(typeof secret).toBe('string');
      expect(table).not.toContain(secret);
      expect(table).not.toContain(secret.slice(key.sent.body.prefix.length));
    }
    expect(JSON.stringify(listed.body)).not.toContain(key.sent.body.key);
  });

  it('writes nothing for a refused action (400, 404, 401)', async () => {
    const { accountId, keyId } = await admin.createAccount({ name: 'refusals' });
    const before = await countAll();
    const refused: Array<[string, string, unknown, number, string?]> = [
      ['POST', '/accounts', { name: '' }, 400],
      ['POST', '/accounts', { name: 'x', extra: 1 }, 400],
      ['PATCH', `/accounts/${accountId}`, { rpm: 0 }, 400],
      ['PATCH', `/accounts/${randomUUID()}`, { rpm: 10 }, 404],
      ['POST', `/accounts/${accountId}/credits`, { amount_usd: -1 }, 400],
      ['POST', `/accounts/${randomUUID()}/credits`, { amount_usd: 1 }, 404],
      ['PUT', `/accounts/${accountId}/spending-limit`, { monthly_limit_usd: 'lots' }, 400],
      ['PUT', `/accounts/${accountId}/subscription`, { status: 'gold' }, 400],
      ['POST', `/accounts/${randomUUID()}/keys`, { name: 'k' }, 404],
      ['POST', `/accounts/${accountId}/keys`, { models: ['no-such-model'] }, 400],
      ['PATCH', `/keys/${randomUUID()}`, { name: 'k' }, 404],
      ['POST', `/keys/${keyId}/rotate`, { grace_s: -1 }, 400],
      ['POST', `/keys/${randomUUID()}/rotate`, {}, 404],
      ['DELETE', `/keys/${randomUUID()}`, undefined, 404],
      ['DELETE', '/keys/not-an-id', undefined, 404],
      ['POST', `/accounts/${accountId}/credits`, { amount_usd: 1 }, 401, 'wrong-token'],
    ];
    for (const [method, path, body, status, token] of refused) {
      const sent = await send(method, path, body, token);
      expect({ method, path, status: sent.status }).toEqual({ method, path, status });
      expect(await rowsOf(sent.requestId)).toEqual([]);
    }
    expect(await countAll()).toBe(before);
    const account = await admin.account(accountId);
    expect(account.credits_usd).toBe('0.000000');
  });

  it('keeps the answer of a done action when its row cannot be written', async () => {
    const { accountId } = await admin.createAccount({ name: 'audit-down' });
    await db.query(`ALTER TABLE admin_audit RENAME TO admin_audit_away`);
    let sent: Sent;
    try {
      sent = await send('POST', `/accounts/${accountId}/credits`, { amount_usd: 3 });
    } finally {
      await db.query(`ALTER TABLE admin_audit_away RENAME TO admin_audit`);
    }
    expect(sent.status).toBe(200);
    expect(sent.body.credits_usd).toBe('3.000000');
    expect(await rowsOf(sent.requestId)).toEqual([]);
  });

  it('pages newest first with limit and before, filters by account, and lists all accounts without a filter', async () => {
    const { accountId } = await admin.createAccount({ name: 'paged' });
    const other = await admin.createAccount({ name: 'other' });
    for (const amount of ['1', '2', '3', '4']) await send('POST', `/accounts/${accountId}/credits`, { amount_usd: amount });
    await send('POST', `/accounts/${other.accountId}/credits`, { amount_usd: '9' });

    // createAccount wrote account.create and key.create; the four top-ups come after.
    const amounts = ['4', '3', '2', '1'];
    const first = await send('GET', `/audit?account_id=${accountId}&limit=3`);
    expect(first.status).toBe(200);
    expect(first.body.has_more).toBe(true);
    expect(first.body.data.map((r: AuditRow) => r.details.amount_usd)).toEqual(amounts.slice(0, 3));
    expect(first.body.data.every((r: AuditRow) => r.account_id === accountId)).toBe(true);

    const second = await send('GET', `/audit?account_id=${accountId}&limit=3&before=${first.body.data[2].id}`);
    expect(second.status).toBe(200);
    expect(second.body.data.map((r: AuditRow) => r.action)).toEqual(['account.credits', 'key.create', 'account.create']);
    expect(second.body.data[0].details).toEqual({ amount_usd: '1' });
    expect(second.body.has_more).toBe(false);

    const exact = await send('GET', `/audit?account_id=${accountId}&limit=6`);
    expect(exact.body.data).toHaveLength(6);
    expect(exact.body.has_more).toBe(false);

    // Without a filter: every account's rows, the other account's top-up first (the newest).
    const all = await send('GET', '/audit?limit=2');
    expect(all.status).toBe(200);
    expect(all.body.has_more).toBe(true);
    expect(all.body.data.map((r: AuditRow) => [r.account_id, r.details.amount_usd])).toEqual([
      [other.accountId, '9'],
      [accountId, '4'],
    ]);
    const defaultPage = await send('GET', '/audit');
    expect(defaultPage.body.data.length).toBe(Math.min(50, await countAll()));

    const unknown = await send('GET', `/audit?account_id=${randomUUID()}`);
    expect(unknown.body).toEqual({ object: 'list', data: [], has_more: false });
  });

  it('refuses bad parameters with 400 invalid_request naming the parameter', async () => {
    const [{ max }] = await db.query(`SELECT COALESCE(max(id), 0)::text AS max FROM admin_audit`);
    const cases: Array<[string, string]> = [
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1.5', 'limit'],
      ['limit=1&limit=2', 'limit'],
      ['account_id=nope', 'account_id'],
      ['account_id=', 'account_id'],
      ['before=abc', 'before'],
      ['before=0', 'before'],
      ['before=-3', 'before'],
      ['before=99999999999999999999', 'before'],
      [`before=${BigInt(max) + 1000n}`, 'before'],
      ['colour=red', 'colour'],
    ];
    for (const [query, param] of cases) {
      const res = await send('GET', `/audit?${query}`);
      expect({ query, status: res.status, code: res.body?.error?.code, param: res.body?.error?.param }).toEqual({
        query,
        status: 400,
        code: 'invalid_request_error',
        param,
      });
      expect(typeof res.body.error.message).toBe('string');
    }
  });

  it('needs the admin token', async () => {
    for (const token of ['', `${TEST_ADMIN_TOKEN}x`]) {
      const res = await send('GET', '/audit', undefined, token);
      expect(res.status).toBe(401);
      expect(res.body.data).toBeUndefined();
    }
  });
});
