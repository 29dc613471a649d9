import { DataSource } from 'typeorm';
import { usdToMicros } from '../src/common/money';
import { AdminClient } from './support/admin-client';
import { moneyOf, postChat, sdk, usd, waitForUsageRows, useGateway } from './support/chat-support';
import { TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

const say = (content: string) => [{ role: 'user' as const, content }];

describe('GET /v1/usage', () => {
  let gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useGateway();
  beforeAll(() => ({ gw, admin, db } = suite));

  const ownUsage = async (key: string, query = '') => {
    const res = await fetch(`${gw.url}/v1/usage${query}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: (await res.json()) as any };
  };


  it("returns the calling account's per-key and per-model totals, equal to the admin view and the ledger, and nothing of another account", async () => {
    const a = await admin.createAccount({ name: 'usage-a', creditsUsd: '1' });
    const a2 = (await admin.request('POST', `/accounts/${a.accountId}/keys`, { name: 'second' })).body;
    const b = await admin.createAccount({ name: 'usage-b', creditsUsd: '1' });

    await sdk(gw, a.key).chat.completions.create({ model: 'dev-echo', messages: say('alpha beta gamma') });
    await sdk(gw, a2.key).chat.completions.create({ model: 'dev-echo', messages: say('delta epsilon') });
    expect((await postChat(gw, a2.key, { model: 'no-such-model', messages: say('x') })).status).toBe(400);
    await sdk(gw, b.key).chat.completions.create({ model: 'dev-echo', messages: say('only b') });
    const aRows = await waitForUsageRows(db, a.accountId, 3);
    const bRows = await waitForUsageRows(db, b.accountId, 1);

    const adminView = await admin.usage(a.accountId);
    const { status, body } = await ownUsage(a.key);
    expect(status).toBe(200);
    expect(body.account_id).toBe(a.accountId);
    for (const part of ['totals', 'by_key', 'by_model', 'daily', 'latest']) expect(body[part]).toEqual(adminView[part]);

    expect(body.totals.requests).toBe(3);
    const charged = (await moneyOf(db, a.accountId)).charges.reduce((n, c) => n + c.amount, 0n);
    expect(usdToMicros(body.totals.cost_usd)).toBe(charged);
    expect(body.by_key.map((k: any) => k.key_id).sort()).toEqual([a.keyId, a2.id].sort());
    const byKey = Object.fromEntries(body.by_key.map((k: any) => [k.key_id, k]));
    expect(byKey[a.keyId]).toMatchObject({ requests: 1, key_name: 'test' });
    expect(byKey[a2.id]).toMatchObject({ requests: 2, key_name: 'second' });
    const chatRows = aRows.filter((r) => r.model === 'dev-echo');
    expect(body.by_model.find((m: any) => m.model === 'dev-echo')).toMatchObject({
      requests: 2,
      prompt_tokens: chatRows.reduce((n, r) => n + r.prompt_tokens, 0),
      completion_tokens: chatRows.reduce((n, r) => n + r.completion_tokens, 0),
      cost_usd: usd(charged),
    });
    // The rejected request is listed too, under its own model entry, at no cost.
    const others = body.by_model.filter((m: any) => m.model !== 'dev-echo');
    expect(others).toEqual([expect.objectContaining({ requests: 1, prompt_tokens: 0, completion_tokens: 0, cost_usd: '0.000000' })]);

    // Account B sees its own request only, none of A's keys, requests or models.
    const seenByB = await ownUsage(b.key);
    expect(seenByB.body.account_id).toBe(b.accountId);
    expect(seenByB.body.totals.requests).toBe(1);
    expect(seenByB.body.by_key.map((k: any) => k.key_id)).toEqual([b.keyId]);
    expect(seenByB.body.latest.map((r: any) => r.request_id)).toEqual(bRows.map((r) => r.request_id));
    const text = JSON.stringify(seenByB.body);
    for (const id of [a.accountId, a.keyId, a2.id, ...aRows.map((r) => r.request_id)]) expect(text).not.toContain(id);
  });

  it("refuses to be pointed at another account, and the request itself appears in the caller's usage", async () => {
    const a = await admin.createAccount({ name: 'usage-c' });
    const b = await admin.createAccount({ name: 'usage-d' });
    const res = await ownUsage(b.key, `?account_id=${a.accountId}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request_error');

    const rows = await waitForUsageRows(db, b.accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ endpoint: '/v1/usage', status: 400, error_code: 'invalid_request_error' })]);
    expect(await waitForUsageRows(db, a.accountId, 0)).toHaveLength(0);
  });

  it('limits the totals to [from, to) and rejects dates that do not parse', async () => {
    const { key, accountId } = await admin.createAccount({ name: 'usage-e', creditsUsd: '1' });
    await sdk(gw, key).chat.completions.create({ model: 'dev-echo', messages: say('hello') });
    await waitForUsageRows(db, accountId, 1);
    const past = await ownUsage(key, '?from=2020-01-01&to=2020-02-01');
    expect(past.status).toBe(200);
    expect(past.body).toMatchObject({ from: '2020-01-01T00:00:00.000Z', to: '2020-02-02T00:00:00.000Z' });
    expect(past.body.totals).toMatchObject({ requests: 0, cost_usd: '0.000000' });
    expect(past.body.by_key).toEqual([]);

    const current = await ownUsage(key);
    expect(current.body.totals.requests).toBeGreaterThanOrEqual(1);

    for (const query of ['?from=yesterday', '?to=2020-13-45', '?from=2021-01-01&to=2020-01-01']) {
      const bad = await ownUsage(key, query);
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('invalid_request_error');
    }
  });

  it('answers 401 invalid_api_key without a key or with the admin token', async () => {
    for (const headers of [{}, { authorization: `Bearer ${TEST_ADMIN_TOKEN}` }] as Record<string, string>[]) {
      const res = await fetch(`${gw.url}/v1/usage`, { headers });
      expect(res.status).toBe(401);
      expect(((await res.json()) as any).error.code).toBe('invalid_api_key');
    }
  });
});
