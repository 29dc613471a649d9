import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { NotFoundError } from 'openai';
import { AdminClient } from './support/admin-client';
import { anthropic } from './support/messages-support';
import { expectValidAgainst } from './support/openapi';
import { RawConfig, startTestApp, TestApp } from './support/test-app';

const SLASHED_ID = 'acme/llama-3.1:8b_instruct';
const ECHO_ALIAS = 'echo-latest';
/** Anthropic's created_at: RFC 3339, to the second, in UTC. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

describe('GET /v1/models', () => {
  let gw: TestApp;
  let admin: AdminClient;
  let key: string;
  let client: OpenAI;

  beforeAll(async () => {
    gw = await startTestApp({
      config: (raw: RawConfig) => {
        raw.catalog.push({ ...raw.catalog.find((m: { id: string }) => m.id === 'dev-echo'), id: SLASHED_ID, aliases: undefined, created: 1700000000, context_window: 8192 });
        raw.catalog.find((m: { id: string }) => m.id === 'dev-echo').aliases = [ECHO_ALIAS];
      },
    });
    admin = new AdminClient(gw.url);
    ({ key } = await admin.createAccount());
    client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => gw.close());

  const get = (path: string, headers: Record<string, string> = { authorization: `Bearer ${key}` }) => fetch(`${gw.url}${path}`, { headers });

  it('lists every catalog id through the openai SDK (no alias), valid against ListModelsResponse', async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id).sort()).toEqual(gw.config.catalog.map((m) => m.id).sort());
    expect(page.data.map((m) => m.id)).not.toContain(ECHO_ALIAS);
    expect(page.data.map((m) => m.id)).not.toContain('tts-1');

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
  describe("Anthropic's shapes (a request with anthropic-version, as Anthropic's SDKs send)", () => {
    let claude: Anthropic;
    beforeAll(() => {
      claude = anthropic(gw, key);
    });

    const chatIds = () => gw.config.catalog.filter((m) => m.kind === 'chat').map((m) => m.id);

    it('lists the chat models only, each as a ModelInfo, in one page: has_more false, first_id and last_id', async () => {
      const page = await claude.models.list();
      expect(page.data.map((m) => m.id)).toEqual(chatIds());
      expect(page.data).toContainEqual({
        type: 'model',
        id: SLASHED_ID,
        display_name: SLASHED_ID,
        created_at: '2023-11-14T22:13:20Z',
        max_input_tokens: 8192,
        max_tokens: 4096,
      });
      expect(page.data.find((m) => m.id === 'dev-echo')).toEqual({
        type: 'model',
        id: 'dev-echo',
        display_name: 'dev-echo',
        created_at: expect.stringMatching(RFC3339),
        max_input_tokens: null,
        max_tokens: 4096,
      });
      const raw = await get('/v1/models', { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
      expect(raw.status).toBe(200);
      expect(await raw.json()).toEqual({ data: page.data, has_more: false, first_id: chatIds()[0], last_id: chatIds().at(-1) });
    });

    it('pages as Anthropic does: limit, after_id and before_id, which the SDK follows to read the whole list', async () => {
      const anthropicHeaders = { 'x-api-key': key, 'anthropic-version': '2023-06-01' };
      const first = (await (await get('/v1/models?limit=1', anthropicHeaders)).json()) as any;
      expect(first).toMatchObject({ has_more: true, first_id: chatIds()[0], last_id: chatIds()[0] });
      expect(first.data).toHaveLength(1);
      const after = (await (await get(`/v1/models?limit=1&after_id=${chatIds()[0]}`, anthropicHeaders)).json()) as any;
      expect(after).toMatchObject({ has_more: false, first_id: chatIds()[1], last_id: chatIds()[1] });
      const before = (await (await get(`/v1/models?limit=5&before_id=${encodeURIComponent(chatIds()[1])}`, anthropicHeaders)).json()) as any;
      expect(before).toMatchObject({ has_more: false, first_id: chatIds()[0], last_id: chatIds()[0] });

      const seen: string[] = [];
      for await (const model of claude.models.list({ limit: 1 })) seen.push(model.id);
      expect(seen).toEqual(chatIds());
    });

    it.each([
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=ten', 'limit'],
      ['after_id=no-such-model', 'after_id'],
      ['before_id=local-tts', 'before_id'],
      ['after_id=', 'after_id'],
    ])("answers a bad page parameter (%s) with 400 in Anthropic's envelope", async (query, param) => {
      const res = await get(`/v1/models?${query}`, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ type: 'error', error: { type: 'invalid_request_error', code: 'invalid_request_error', param, message: expect.any(String) } });
    });

    it('retrieves a chat model by id or alias (answered under the alias)', async () => {
      const listed = (await claude.models.list()).data.find((m) => m.id === 'dev-echo')!;
      expect(await claude.models.retrieve('dev-echo')).toEqual(listed);
      expect(await claude.models.retrieve(ECHO_ALIAS)).toEqual({ ...listed, id: ECHO_ALIAS, display_name: ECHO_ALIAS });
      expect(await claude.models.retrieve(SLASHED_ID)).toMatchObject({ type: 'model', id: SLASHED_ID, created_at: '2023-11-14T22:13:20Z' });
    });

    it.each(['claude-sonnet-4-5', 'local-tts', 'tts-1', 'local-stt'])(
      "answers %s (unknown, or not a chat model) with 404 not_found_error in Anthropic's envelope",
      async (id) => {
        const err = await claude.models.retrieve(id).then(
          () => null,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(Anthropic.NotFoundError);
        const raw = await get(`/v1/models/${id}`, { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
        expect(raw.status).toBe(404);
        expect(raw.headers.get('x-request-id')).toMatch(/^req_/);
        expect(await raw.json()).toEqual({
          type: 'error',
          error: { type: 'not_found_error', code: 'model_not_found', param: 'model', message: `The model "${id}" does not exist; GET /v1/models lists the models served.` },
        });
      },
    );

    it("takes the key as Bearer too (Claude Code with an auth token), and answers a bad key with Anthropic's authentication_error", async () => {
      const bearer = anthropic(gw, key, { bearer: true });
      expect((await bearer.models.list()).data.map((m) => m.id)).toEqual(chatIds());
      const unknown = await get('/v1/models', { 'x-api-key': 'gwk_unknown', 'anthropic-version': '2023-06-01' });
      expect(unknown.status).toBe(401);
      expect(await unknown.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error', code: 'invalid_api_key' } });
      const missing = await get('/v1/models/dev-echo', { 'anthropic-version': '2023-06-01' });
      expect(missing.status).toBe(401);
      expect(((await missing.json()) as any).error).toMatchObject({ type: 'authentication_error', message: expect.stringContaining('x-api-key') });
    });

    it("answers another method with 405 in Anthropic's envelope, before auth", async () => {
      const res = await fetch(`${gw.url}/v1/models/dev-echo`, { method: 'DELETE', headers: { 'anthropic-version': '2023-06-01' } });
      expect(res.status).toBe(405);
      expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'method_not_allowed' } });
    });

    it("answers OpenAI's shapes to x-api-key without anthropic-version, and OpenAI's errors", async () => {
      const listed = await get('/v1/models', { 'x-api-key': key });
      expect(listed.status).toBe(200);
      expect(await listed.json()).toEqual(await (await get('/v1/models')).json());
      const one = await get('/v1/models/tts-1', { 'x-api-key': key });
      expect(await one.json()).toEqual({ id: 'tts-1', object: 'model', created: expect.any(Number), owned_by: 'local' });
      const missing = await get('/v1/models/claude-sonnet-4-5', { 'x-api-key': key });
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as any).error).toMatchObject({ code: 'model_not_found', type: 'invalid_request_error' });
    });
  });
});
