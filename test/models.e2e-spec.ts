import OpenAI from 'openai';
import { AdminClient } from './support/admin-client';
import { expectValidAgainst } from './support/openapi';
import { startTestApp, TestApp } from './support/test-app';

describe('GET /v1/models', () => {
  let gw: TestApp;
  let admin: AdminClient;

  beforeAll(async () => {
    gw = await startTestApp();
    admin = new AdminClient(gw.url);
  });
  afterAll(() => gw.close());

  it('lists every catalog id through the openai SDK, valid against ListModelsResponse', async () => {
    const { key } = await admin.createAccount();
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1` });
    const page = await client.models.list();
    expect(page.data.map((m) => m.id).sort()).toEqual(gw.config.catalog.map((m) => m.id).sort());

    const raw = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
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
});
