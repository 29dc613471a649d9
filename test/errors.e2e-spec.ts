import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

const JSON_LIMIT = 2048;
const ADMIN_HEADERS = { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' };

function expectErrorBody(body: any, code: string, type = 'invalid_request_error'): void {
  const { param, ...rest } = body.error;
  expect(rest).toEqual({ message: expect.any(String), type, code });
  expect(param === null || typeof param === 'string').toBe(true);
}

/** A request body sent with chunked transfer encoding, so the server cannot judge it by Content-Length. */
function chunked(text: string): { body: ReadableStream<Uint8Array>; duplex: 'half' } {
  const bytes = new TextEncoder().encode(text);
  return {
    body: new ReadableStream({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 256) controller.enqueue(bytes.slice(i, i + 256));
        controller.close();
      },
    }),
    duplex: 'half',
  };
}

describe('Error contract', () => {
  let gw: TestApp;
  let key: string;

  beforeAll(async () => {
    gw = await startTestApp({ config: (raw) => (raw.limits.json_body_max_bytes = JSON_LIMIT) });
    ({ key } = await new AdminClient(gw.url).createAccount());
  });
  afterAll(() => gw.close());

  describe('JSON bodies', () => {
    it.each([
      ['a syntax error', '{"name": "x",'],
      ['a bare word', 'hello'],
      ['an empty body', ''],
    ])('answers %s with 400 invalid_json', async (_name, body) => {
      const res = await fetch(`${gw.url}/admin/v1/accounts`, { method: 'POST', headers: ADMIN_HEADERS, body });
      expect(res.status).toBe(400);
      expect(res.headers.get('x-request-id')).toMatch(/^req_/);
      expectErrorBody(await res.json(), 'invalid_json');
    });

    it('answers a body over the configured limit with 413 payload_too_large (declared length)', async () => {
      const body = JSON.stringify({ name: 'x'.repeat(JSON_LIMIT) });
      const res = await fetch(`${gw.url}/admin/v1/accounts`, { method: 'POST', headers: ADMIN_HEADERS, body });
      expect(res.status).toBe(413);
      expectErrorBody(await res.json(), 'payload_too_large');
    });

    it('answers a chunked body that grows over the limit with 413 payload_too_large', async () => {
      const res = await fetch(`${gw.url}/admin/v1/accounts`, {
        method: 'POST',
        headers: ADMIN_HEADERS,
        ...chunked(JSON.stringify({ name: 'y'.repeat(JSON_LIMIT * 4) })),
      } as RequestInit);
      expect(res.status).toBe(413);
      expectErrorBody(await res.json(), 'payload_too_large');
    });

    it('accepts a chunked body under the limit', async () => {
      const res = await fetch(`${gw.url}/admin/v1/accounts`, {
        method: 'POST',
        headers: ADMIN_HEADERS,
        ...chunked(JSON.stringify({ name: 'chunked' })),
      } as RequestInit);
      expect(res.status).toBe(201);
      expect(((await res.json()) as any).name).toBe('chunked');
    });

    it('does not read the body of a request that fails authentication', async () => {
      // Over the limit and not JSON: only the missing admin token may be reported.
      const res = await fetch(`${gw.url}/admin/v1/accounts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{'.repeat(JSON_LIMIT * 2),
      });
      expect(res.status).toBe(401);
      expectErrorBody(await res.json(), 'invalid_admin_token', 'authentication_error');
    });
  });

  it.each(['/v1/%E0%A4%A', '/admin/v1/accounts/%zz'])('answers a path with broken percent-encoding (%s) with 400, not 500', async (path) => {
    const res = await fetch(`${gw.url}${path}`, { headers: ADMIN_HEADERS });
    expect(res.status).toBe(400);
    expectErrorBody(await res.json(), 'invalid_request_error');
  });

  describe('x-request-id', () => {
    it.each([
      ['200 /v1/models', () => fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } }), 200],
      ['401 /v1/models', () => fetch(`${gw.url}/v1/models`), 401],
      ['404 unknown path', () => fetch(`${gw.url}/v1/unknown`), 404],
      ['404 unknown admin path', () => fetch(`${gw.url}/admin/v1/nothing`, { headers: ADMIN_HEADERS }), 404],
      ['405 /v1/models', () => fetch(`${gw.url}/v1/models`, { method: 'PUT' }), 405],
      ['200 /healthz', () => fetch(`${gw.url}/healthz`), 200],
      ['200 /readyz', () => fetch(`${gw.url}/readyz`), 200],
      ['201 admin', () => fetch(`${gw.url}/admin/v1/accounts`, { method: 'POST', headers: ADMIN_HEADERS, body: '{"name":"a"}' }), 201],
    ])('is on %s', async (_name, call, status) => {
      const res = await call();
      expect(res.status).toBe(status);
      expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{24}$/);
    });

    it('is unique per request', async () => {
      const ids = await Promise.all(Array.from({ length: 20 }, () => fetch(`${gw.url}/healthz`).then((r) => r.headers.get('x-request-id'))));
      expect(new Set(ids).size).toBe(20);
    });
  });

  describe('health', () => {
    it('GET /healthz answers 200 without a key', async () => {
      const res = await fetch(`${gw.url}/healthz`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok' });
    });

    it('GET /readyz answers 200 when the database answers, without a key', async () => {
      const res = await fetch(`${gw.url}/readyz`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ready' });
    });
  });
});

describe('Readiness without a database', () => {
  let gw: TestApp;

  beforeAll(async () => {
    gw = await startTestApp();
  });
  afterAll(async () => {
    // Reopen so that app.close() can shut the data source down as usual.
    const db = gw.app.get(DataSource);
    if (!db.isInitialized) await db.initialize();
    await gw.close();
  });

  it('GET /readyz answers 503 with the error object once the database is gone, /healthz still 200', async () => {
    await gw.app.get(DataSource).destroy();
    const res = await fetch(`${gw.url}/readyz`);
    expect(res.status).toBe(503);
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({ code: 'service_unavailable', type: 'api_error' });
    expect(res.headers.get('retry-after')).toBe('1');
    expect(JSON.stringify(body)).not.toMatch(/\bat .+:\d+:\d+/);
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
  });
});
