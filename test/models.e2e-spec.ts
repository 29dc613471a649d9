import OpenAI, { NotFoundError } from 'openai';
import { AdminClient } from './support/admin-client';
import { expectValidAgainst } from './support/openapi';
import { RawConfig, startTestApp, TestApp } from './support/test-app';

const SLASHED_ID = 'acme/llama-3.1:8b_instruct';

describe('GET /v1/models', () => {
  let gw: TestApp;
  let admin: AdminClient;
  let key: string;
  let client: OpenAI;

  beforeAll(async () => {
    gw = await startTestApp({
      config: (raw: RawConfig) => {
        raw.catalog.push({ ...raw.catalog.find((m: { id: string }) => m.id === 'dev-echo'), id: SLASHED_ID, created: 1700000000 });
      },
    });
    admin = new AdminClient(gw.url);
    ({ key } = await admin.createAccount());
    client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => gw.close());

  const get = (path: string, headers: Record<string, string> = { authorization: `Bearer ${key}` }) => fetch(`${gw.url}${path}`, { headers });

  it('lists every catalog id through the openai SDK, valid against ListModelsResponse', async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id).sort()).toEqual(gw.config.catalog.map((m) => m.id).sort());

    const raw = await get('/v1/models');
    expect(raw.status).toBe(200);
    expect(raw.headers.get('x-request-id')).toMatch(/^req_/);
    const body = await raw.json();
    expectValidAgainst('ListModelsResponse', body);
  });

  it.each(['POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'])('answers %s with 405 method_not_allowed before auth', async (method) => {
    const res = await fetch(`${gw.url}/v1/models`, { method });
    expect(res.status).toBe(405);
    if (method !== 'HEAD') expect(((await res.json()) as any).error.code).toBe('method_not_allowed');
  });

  describe('GET /v1/models/{id}', () => {
    it('retrieves each catalog entry through the openai SDK, as the list shows it, valid against Model', async () => {
      const listed = (await client.models.list()).data;
      for (const entry of listed) {
        expect(await client.models.retrieve(entry.id)).toEqual(entry);
        const raw = await get(`/v1/models/${encodeURIComponent(entry.id)}`);
        expect(raw.status).toBe(200);
        expect(raw.headers.get('x-request-id')).toMatch(/^req_/);
        const body = await raw.json();
        expectValidAgainst('Model', body);
        expect(body).toEqual(entry);
      }
      expect(await client.models.retrieve('dev-echo')).toEqual({ id: 'dev-echo', object: 'model', created: expect.any(Number), owned_by: 'local' });
    });

    it('finds an id with a slash whether the slash is percent-encoded (Node SDK) or not (Python SDK)', async () => {
      const expected = { id: SLASHED_ID, object: 'model', created: 1700000000, owned_by: 'local' };
      expect(await client.models.retrieve(SLASHED_ID)).toEqual(expected);
      for (const path of [`/v1/models/${SLASHED_ID}`, `/v1/models/acme%2Fllama-3.1%3A8b_instruct`]) {
        const res = await get(path);
        expect({ path, status: res.status, body: await res.json() }).toEqual({ path, status: 200, body: expected });
      }
    });

    it('answers an unknown id with 404 model_not_found, which the SDK raises as NotFoundError with its code', async () => {
      const err = await client.models.retrieve('gpt-4o').then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(NotFoundError);
      const notFound = err as NotFoundError;
      expect(notFound.status).toBe(404);
      expect(notFound.code).toBe('model_not_found');
      expect(notFound.type).toBe('invalid_request_error');
      expect(notFound.param).toBe('model');
      expect(notFound.message).toContain('"gpt-4o" does not exist');
      expect(notFound.headers?.get('x-request-id')).toMatch(/^req_/);
    });

    it.each([
      ['a different case', '/v1/models/DEV-ECHO'],
      ['a prefix of a catalog id', '/v1/models/dev'],
      ['a catalog id with more after a slash', '/v1/models/dev-echo/extra'],
      ['only the first part of a slashed id', '/v1/models/acme'],
      ['a path climbing up', '/v1/models/..%2F..%2Fadmin%2Fv1%2Faccounts'],
      ['a NUL byte', '/v1/models/dev-echo%00'],
      ['spaces and quotes', '/v1/models/%22dev%20echo%22'],
      ['a character outside the catalog id alphabet', '/v1/models/dev-echo%E2%9C%93'],
      ['an id of 10,000 characters', `/v1/models/${'m'.repeat(10_000)}`],
    ])('answers %s with 404 model_not_found', async (_, path) => {
      const res = await get(path);
      const body = (await res.json()) as any;
      expect({ status: res.status, code: body.error.code, param: body.error.param }).toEqual({ status: 404, code: 'model_not_found', param: 'model' });
      expect(body.error.message.length).toBeLessThan(200);
    });

    it('takes the id exactly as sent: a trailing slash is part of it', async () => {
      const res = await get('/v1/models/dev-echo/');
      expect(res.status).toBe(404);
      expect(((await res.json()) as any).error).toMatchObject({ code: 'model_not_found', message: expect.stringContaining('"dev-echo/"') });
    });

    it('answers broken percent-encoding with 400 invalid_request_error, as on every path', async () => {
      const res = await get('/v1/models/dev%zzecho');
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.code).toBe('invalid_request_error');
    });

    it.each([
      ['no Authorization header', {}],
      ['an unknown key', { authorization: 'Bearer gwk_unknown' }],
    ])('needs the API key: %s is 401 invalid_api_key, for known and unknown ids alike', async (_, headers) => {
      for (const id of ['dev-echo', 'no-such-model']) {
        const res = await get(`/v1/models/${id}`, headers);
        expect(res.status).toBe(401);
        expect(((await res.json()) as any).error.code).toBe('invalid_api_key');
      }
    });

    it.each(['POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'])('answers %s with 405 method_not_allowed before auth', async (method) => {
      for (const id of ['dev-echo', SLASHED_ID, 'no-such-model']) {
        const res = await fetch(`${gw.url}/v1/models/${id}`, { method });
        expect(res.status).toBe(405);
        if (method !== 'HEAD') expect(((await res.json()) as any).error.code).toBe('method_not_allowed');
      }
    });
  });
});
