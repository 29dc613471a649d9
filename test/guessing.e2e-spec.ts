import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import * as keyFormat from '../src/keys/key-format';
import { AdminClient } from './support/admin-client';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

const WRONG_TOKEN = `Bearer ${'w'.repeat(40)}`;
const VALID_TOKEN = `Bearer ${TEST_ADMIN_TOKEN}`;
/** docs/decisions.md, "Guessing": wrong tokens per address and minute before 429. */
const ALLOWED_WRONG_TOKENS = 10;

function get(url: string, authorization?: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { headers: authorization === undefined ? headers : { ...headers, authorization } });
}

async function expectError(res: Response, status: number, code: string, type: string): Promise<void> {
  expect(res.status).toBe(status);
  expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  expect(await res.json()).toEqual({ error: { message: expect.any(String), type, param: null, code } });
}

async function expectThrottled(res: Response): Promise<void> {
  const retryAfter = Number(res.headers.get('retry-after'));
  await expectError(res, 429, 'rate_limit_exceeded', 'rate_limit_error');
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

/** Every SQL statement the app's TypeORM DataSource sends, seen by a subscriber on that DataSource. */
function recordQueries(gw: TestApp): string[] {
  const queries: string[] = [];
  gw.app.get(DataSource).subscribers.push({ beforeQuery: (event) => void queries.push(event.query) });
  return queries;
}

function models(gw: TestApp, key: string): Promise<Response> {
  return get(`${gw.url}/v1/models`, `Bearer ${key}`);
}

describe('Admin token guessing', () => {
  let gw: TestApp;

  beforeAll(async () => {
    gw = await startTestApp();
  });
  afterAll(() => gw.close());

  it(`answers 429 with Retry-After after ${ALLOWED_WRONG_TOKENS} wrong tokens from one address, on every admin route, while the valid token keeps working`, async () => {
    const account = `${gw.url}/admin/v1/accounts/${randomUUID()}`;
    for (let i = 0; i < ALLOWED_WRONG_TOKENS; i++) {
      await expectError(await get(account, WRONG_TOKEN), 401, 'invalid_admin_token', 'authentication_error');
    }
    for (let i = 0; i < 50; i++) await expectThrottled(await get(account, WRONG_TOKEN));
    await expectThrottled(await get(`${gw.url}/metrics`, WRONG_TOKEN));
    await expectThrottled(await get(`${gw.url}/dashboard/api/accounts?q=x`, WRONG_TOKEN));
    // A client cannot step out of the count by claiming another address: no proxy is trusted here.
    await expectThrottled(await get(account, WRONG_TOKEN, { 'x-forwarded-for': '198.51.100.77' }));

    // The operator, from the same address, is not held up by the guesser.
    expect((await get(`${gw.url}/metrics`, VALID_TOKEN)).status).toBe(200);
    expect((await get(`${gw.url}/dashboard/api/accounts?q=x`, VALID_TOKEN)).status).toBe(200);
    const created = await new AdminClient(gw.url).request('POST', '/accounts', { name: 'operator at work' });
    expect(created.status).toBe(201);
    expect((await get(`${gw.url}/admin/v1/accounts/${created.body.id}`, VALID_TOKEN)).status).toBe(200);
    // No token at all is not a guess: it still gets the 401 that says what to send.
    await expectError(await get(account), 401, 'invalid_admin_token', 'authentication_error');
  });
});

describe('Admin token guessing behind a trusted proxy (TRUST_PROXY_HOPS=1, as nginx in docker-compose)', () => {
  let gw: TestApp;

  beforeAll(async () => {
    gw = await startTestApp({ env: { trustProxyHops: 1 } });
  });
  afterAll(() => gw.close());

  it('counts per client address as the proxy saw it, which a client cannot forge with its own X-Forwarded-For', async () => {
    const metrics = `${gw.url}/metrics`;
    // nginx appends the address it saw: the last entry is the client's, whatever the client sent before it.
    const guesser = { 'x-forwarded-for': '203.0.113.1' };
    for (let i = 0; i < ALLOWED_WRONG_TOKENS; i++) expect((await get(metrics, WRONG_TOKEN, guesser)).status).toBe(401);
    await expectThrottled(await get(metrics, WRONG_TOKEN, guesser));
    await expectThrottled(await get(metrics, WRONG_TOKEN, { 'x-forwarded-for': '10.9.8.7, 203.0.113.1' }));

    // Another client behind the same proxy has its own count.
    expect((await get(metrics, WRONG_TOKEN, { 'x-forwarded-for': '203.0.113.2' })).status).toBe(401);
    expect((await get(metrics, VALID_TOKEN, guesser)).status).toBe(200);
  });
});

describe('Forged API keys', () => {
  let gw: TestApp;
  let queries: string[];

  beforeAll(async () => {
    gw = await startTestApp();
    queries = recordQueries(gw);
  });
  afterAll(() => gw.close());

  it('a well-formed key the database does not know costs one query, then none while it is remembered as unknown', async () => {
    const forged = keyFormat.generateApiKey();
    queries.length = 0;
    await expectError(await models(gw, forged), 401, 'invalid_api_key', 'authentication_error');
    // The first use is looked up: the counter sees the query (so the next assertion can fail).
    expect(queries.filter((sql) => sql.includes('api_keys'))).toHaveLength(1);

    queries.length = 0;
    for (let i = 0; i < 20; i++) await expectError(await models(gw, forged), 401, 'invalid_api_key', 'authentication_error');
    expect(queries).toEqual([]);
  });
});

describe('Forged API keys across replicas', () => {
  let first: TestApp;
  let second: TestApp;

  beforeAll(async () => {
    [first, second] = await Promise.all([startTestApp(), startTestApp()]);
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await Promise.all([first.close(), second.close()]);
  });

  it('a key created on one replica right after both looked it up as unknown works at once there and within 1 s on the other', async () => {
    const { accountId } = await new AdminClient(first.url).createAccount();
    // That account's own key sends a creation notice; one arriving during a look-up (by design) keeps the
    // answer from being remembered, so let it reach both replicas first (it takes milliseconds).
    await new Promise((resolve) => setTimeout(resolve, 500));
    const upcoming = keyFormat.generateApiKey();
    for (const gw of [first, second]) {
      const queries = recordQueries(gw);
      expect((await models(gw, upcoming)).status).toBe(401);
      expect((await models(gw, upcoming)).status).toBe(401);
      // Remembered as unknown on both: only the creation can make them look again.
      expect(queries.filter((sql) => sql.includes('api_keys'))).toHaveLength(1);
    }

    // The only way to have a key looked up before it exists: the test chooses the "random" key.
    jest.spyOn(keyFormat, 'generateApiKey').mockReturnValueOnce(upcoming);
    const created = await new AdminClient(first.url).request('POST', `/accounts/${accountId}/keys`, { name: 'fresh' });
    const createdAt = Date.now();
    expect(created.status).toBe(201);
    expect(created.body.key).toBe(upcoming);

    expect((await models(first, upcoming)).status).toBe(200);
    let status = 401;
    while (status === 401 && Date.now() - createdAt < 5_000) {
      status = (await models(second, upcoming)).status;
      if (status === 401) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(status).toBe(200);
    expect(Date.now() - createdAt).toBeLessThan(1_000);
  });
});
