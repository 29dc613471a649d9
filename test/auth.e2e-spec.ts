import { getRepositoryToken } from '@nestjs/typeorm';
import OpenAI from 'openai';
import { Repository } from 'typeorm';
import { ApiKey } from '../src/keys/api-key.entity';
import { KEY_LOOKUP } from '../src/keys/cached-key';
import { generateApiKey } from '../src/keys/key-format';
import { AdminClient } from './support/admin-client';
import { startTestApp, TestApp } from './support/test-app';

function modelsWith(url: string, authorization?: string): Promise<Response> {
  return fetch(`${url}/v1/models`, { headers: authorization === undefined ? {} : { authorization } });
}

async function expectInvalidKey(res: Response): Promise<void> {
  expect(res.status).toBe(401);
  expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  const body = (await res.json()) as any;
  expect(body).toEqual({
    error: { message: expect.any(String), type: 'authentication_error', param: null, code: 'invalid_api_key' },
  });
}

/** Counts an app's look-ups of keys in the database (KEY_LOOKUP, on its key repository), passing them through. */
function spyOnKeyLookups(app: TestApp['app']): { count(): number; clear(): void } {
  const spy = jest.spyOn(app.get<Repository<ApiKey>>(getRepositoryToken(ApiKey)), 'query');
  return { count: () => spy.mock.calls.filter(([sql]) => sql === KEY_LOOKUP).length, clear: () => spy.mockClear() };
}

/** Replaces one character of the random part, keeping prefix and length: only the checksum can tell. */
function withBadChecksum(key: string): string {
  const i = 10;
  return key.slice(0, i) + (key[i] === 'a' ? 'b' : 'a') + key.slice(i + 1);
}

describe('API key authentication', () => {
  let gw: TestApp;
  let admin: AdminClient;
  let key: string;
  let keyLookups: ReturnType<typeof spyOnKeyLookups>;

  beforeAll(async () => {
    gw = await startTestApp();
    admin = new AdminClient(gw.url);
    ({ key } = await admin.createAccount());
    keyLookups = spyOnKeyLookups(gw.app);
  });
  afterAll(() => gw.close());
  beforeEach(() => keyLookups.clear());

  it('accepts a valid key', async () => {
    const res = await modelsWith(gw.url, `Bearer ${key}`);
    expect(res.status).toBe(200);
  });

  it('accepts the scheme name in any case, as RFC 7235 says', async () => {
    expect((await modelsWith(gw.url, `bearer ${key}`)).status).toBe(200);
  });

  it('refuses a missing Authorization header', async () => {
    await expectInvalidKey(await modelsWith(gw.url));
  });

  it.each([
    ['Basic', () => `Basic ${Buffer.from(`user:${key}`).toString('base64')}`],
    ['Token', () => `Token ${key}`],
    ['a bare key', () => key],
    ['Bearer without a token', () => 'Bearer '],
    ['Bearer with two tokens', () => `Bearer ${key} ${key}`],
  ])('refuses another scheme or shape: %s', async (_name, header) => {
    await expectInvalidKey(await modelsWith(gw.url, header()));
    expect(keyLookups.count()).toBe(0);
  });

  it.each([
    ['a foreign prefix', () => `sk-${key.slice(4)}`],
    ['a wrong prefix of the right length', () => `gwx_${key.slice(4)}`],
    ['one character short', () => key.slice(0, -1)],
    ['one character long', () => `${key}a`],
    ['a character outside base62', () => `${key.slice(0, 20)}-${key.slice(21)}`],
    ['a wrong checksum', () => withBadChecksum(key)],
  ])('refuses a malformed key (%s) without a database look-up', async (_name, malformed) => {
    const presented = malformed();
    expect(presented).not.toBe(key);
    await expectInvalidKey(await modelsWith(gw.url, `Bearer ${presented}`));
    expect(keyLookups.count()).toBe(0);
  });

  it('refuses a well-formed key that was never issued, after looking it up', async () => {
    await expectInvalidKey(await modelsWith(gw.url, `Bearer ${generateApiKey()}`));
    expect(keyLookups.count()).toBe(1);
  });

  it('refuses a revoked key at once on the instance that revoked it, through the openai SDK too', async () => {
    const account = await admin.createAccount();
    expect((await modelsWith(gw.url, `Bearer ${account.key}`)).status).toBe(200);

    const revoked = await admin.request('DELETE', `/keys/${account.keyId}`);
    expect(revoked.status).toBe(200);

    await expectInvalidKey(await modelsWith(gw.url, `Bearer ${account.key}`));
    const client = new OpenAI({ apiKey: account.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    await expect(client.models.list()).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
  });

  it('keeps the account\'s other keys working when one is revoked', async () => {
    const account = await admin.createAccount();
    const second = await admin.request('POST', `/accounts/${account.accountId}/keys`, { name: 'second' });
    await admin.request('DELETE', `/keys/${account.keyId}`);
    await expectInvalidKey(await modelsWith(gw.url, `Bearer ${account.key}`));
    expect((await modelsWith(gw.url, `Bearer ${second.body.key}`)).status).toBe(200);
  });

  it('serves a known key from the in-process cache after the first look-up', async () => {
    const account = await admin.createAccount();
    for (let i = 0; i < 3; i++) expect((await modelsWith(gw.url, `Bearer ${account.key}`)).status).toBe(200);
    expect(keyLookups.count()).toBe(1);
  });
});

describe('API key revocation across replicas', () => {
  let first: TestApp;
  let second: TestApp;

  beforeAll(async () => {
    [first, second] = await Promise.all([startTestApp(), startTestApp()]);
  });
  afterAll(() => Promise.all([first.close(), second.close()]));

  it('a key revoked through one instance is refused by another on the same database within 2 s', async () => {
    const { key, keyId } = await new AdminClient(first.url).createAccount();
    // Warm the second instance's cache so that only the revocation notice can make it refuse the key.
    const lookups = spyOnKeyLookups(second.app);
    expect((await modelsWith(second.url, `Bearer ${key}`)).status).toBe(200);
    expect((await modelsWith(second.url, `Bearer ${key}`)).status).toBe(200);
    expect(lookups.count()).toBe(1);

    const revokedAt = Date.now();
    expect((await new AdminClient(first.url).request('DELETE', `/keys/${keyId}`)).status).toBe(200);

    let status = 200;
    while (status === 200 && Date.now() - revokedAt < 5_000) {
      status = (await modelsWith(second.url, `Bearer ${key}`)).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 20));
    }
    const elapsed = Date.now() - revokedAt;
    expect(status).toBe(401);
    expect(elapsed).toBeLessThan(2_000);
  });

  it('a burst on a key another instance created reads its row once, not once per request', async () => {
    const { key } = await new AdminClient(first.url).createAccount();
    const lookups = spyOnKeyLookups(second.app);
    lookups.clear();
    const statuses = await Promise.all(Array.from({ length: 50 }, () => modelsWith(second.url, `Bearer ${key}`).then((r) => r.status)));
    expect(statuses).toEqual(Array(50).fill(200));
    expect(lookups.count()).toBe(1);
  });
});
