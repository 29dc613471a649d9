import { createHash } from 'node:crypto';
import { FAKE_TTS, withFakeAudioProvider } from './support/audio-support';
import { moneyOf, PricedModel, postJson, useGatewayWithFake, withFakeProvider } from './support/chat-support';

/**
 * Idempotency-Key, issue 43 (DESIGN.md section 12.3): the body's fingerprint is canonical JSON, so a retry that
 * re-serialised its body replays; and a replay first passes, for the key presenting it, the checks that precede the
 * body (revoked, expired, the key's model list, speech's entitlement): a key never receives an answer it could not
 * have obtained itself. On chat completions, Responses, Messages and speech.
 */
const MODEL: PricedModel = { id: 'idem-check-chat', input: 2, output: 10, maxOutput: 500 };
const OTHER: PricedModel = { id: 'idem-check-other', input: 2, output: 10, maxOutput: 500 };

interface Route {
  path: string;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

const ROUTES: Route[] = [
  { path: '/v1/chat/completions', body: { model: MODEL.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 20, temperature: 0.5 } },
  { path: '/v1/responses', body: { model: MODEL.id, input: [{ role: 'user', content: 'hi' }], max_output_tokens: 20 } },
  {
    path: '/v1/messages',
    body: { model: MODEL.id, max_tokens: 50, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] },
    headers: { 'anthropic-version': '2023-06-01' },
  },
  { path: '/v1/audio/speech', body: { model: FAKE_TTS.id, input: 'Hello there.', voice: 'alloy', response_format: 'mp3' } },
];
/** Chat, Responses and Messages are charged; speech is included in the subscription. */
const CHARGED_ROUTES = 3;

/** The same JSON written again as another client might: every object's keys in reverse order, indented. */
function reserialised(body: unknown): string {
  const reversed = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(reversed);
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reversed(v)]));
  };
  return JSON.stringify(reversed(body), null, 2);
}

describe('Idempotency-Key: canonical fingerprint, and the presenting key checked before a replay', () => {
  const suite = useGatewayWithFake((url) => (raw) => {
    withFakeProvider(url, [MODEL, OTHER])(raw);
    withFakeAudioProvider(url)(raw);
  });
  beforeEach(() => suite.fake.resetState());

  async function send(key: string, route: Route, text: string, idempotencyKey: string) {
    const res = await postJson(suite.gw, key, route.path, text, {
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey, ...route.headers },
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    return { status: res.status, replayed: res.headers.get('idempotent-replayed'), bytes };
  }
  /** The error object; Messages answers in Anthropic's envelope (`{type: "error", error}`), the others in OpenAI's. */
  const errorOf = (route: Route, r: { bytes: Buffer }) => {
    const body = JSON.parse(r.bytes.toString('utf8'));
    if (route.path === '/v1/messages') expect(body.type).toBe('error');
    return body.error;
  };
  const idemKey = (name: string, route: Route) => `${name}${route.path}`;

  async function newKey(accountId: string, body: Record<string, unknown> = {}): Promise<{ id: string; key: string }> {
    const res = await suite.admin.request('POST', `/accounts/${accountId}/keys`, { name: 'second', ...body });
    expect(res.status).toBe(201);
    return res.body;
  }

  /** The first request of each route under `name`, answered 200 and kept. */
  async function firstRequests(key: string, name: string): Promise<Map<string, Buffer>> {
    const answers = new Map<string, Buffer>();
    for (const route of ROUTES) {
      const first = await send(key, route, JSON.stringify(route.body), idemKey(name, route));
      expect({ path: route.path, status: first.status }).toEqual({ path: route.path, status: 200 });
      answers.set(route.path, first.bytes);
    }
    return answers;
  }

  it('replays a body re-serialised with its keys in another order and other spacing; one upstream call and one charge each', async () => {
    const { accountId, key } = await suite.admin.createAccount({ creditsUsd: '1', subscription: 'active' });
    const answers = await firstRequests(key, 'reordered');
    const seen = [];
    for (const route of ROUTES) {
      const again = await send(key, route, reserialised(route.body), idemKey('reordered', route));
      seen.push({ path: route.path, status: again.status, replayed: again.replayed, same: again.bytes.equals(answers.get(route.path)!) });
    }
    expect(seen).toEqual(ROUTES.map(({ path }) => ({ path, status: 200, replayed: 'true', same: true })));
    expect(suite.fake.requests).toHaveLength(ROUTES.length);
    const money = await moneyOf(suite.db, accountId);
    expect(money.charges).toHaveLength(CHARGED_ROUTES);
    expect(money.ledgerSum).toBe(money.balance);
  });

  it('replays a record kept before fingerprints were canonical (the hash of the body as sent) to the same body', async () => {
    const { accountId, key } = await suite.admin.createAccount({ creditsUsd: '1' });
    const chat = ROUTES[0];
    const first = await send(key, chat, JSON.stringify(chat.body), 'legacy');
    const legacy = createHash('sha256').update(JSON.stringify(chat.body)).digest('hex');
    await suite.db.query(`UPDATE idempotency_keys SET body_hash = $1 WHERE account_id = $2 AND key = 'legacy'`, [legacy, accountId]);
    const again = await send(key, chat, JSON.stringify(chat.body), 'legacy');
    expect({ status: again.status, replayed: again.replayed, same: again.bytes.equals(first.bytes) }).toEqual({ status: 200, replayed: 'true', same: true });
    expect(suite.fake.requests).toHaveLength(1);
  });

  it("refuses the replay to another key of the account whose model list leaves out the answer's model: 400 model_not_allowed, nothing run or charged", async () => {
    const { accountId, key } = await suite.admin.createAccount({ creditsUsd: '1', subscription: 'active' });
    const restricted = await newKey(accountId, { models: [OTHER.id] });
    const allowed = await newKey(accountId, { models: [MODEL.id, FAKE_TTS.id] });
    const answers = await firstRequests(key, 'models');
    const before = await moneyOf(suite.db, accountId);
    const seen = [];
    for (const route of ROUTES) {
      const refused = await send(restricted.key, route, JSON.stringify(route.body), idemKey('models', route));
      const { code, param } = refused.status === 200 ? { code: null, param: null } : errorOf(route, refused);
      seen.push({ path: route.path, status: refused.status, replayed: refused.replayed, code, param });
      // A key whose list holds the model gets the account's answer.
      const replayed = await send(allowed.key, route, JSON.stringify(route.body), idemKey('models', route));
      expect({ path: route.path, status: replayed.status, replayed: replayed.replayed }).toEqual({ path: route.path, status: 200, replayed: 'true' });
      expect(replayed.bytes.equals(answers.get(route.path)!)).toBe(true);
    }
    expect(seen).toEqual(ROUTES.map(({ path }) => ({ path, status: 400, replayed: null, code: 'model_not_allowed', param: 'model' })));
    expect(suite.fake.requests).toHaveLength(ROUTES.length);
    const after = await moneyOf(suite.db, accountId);
    expect(after.charges).toHaveLength(CHARGED_ROUTES);
    expect(after.balance).toBe(before.balance);
  });

  it('refuses a revoked or an expired key presenting a kept Idempotency-Key: 401 invalid_api_key, no replay', async () => {
    const { accountId, key } = await suite.admin.createAccount({ creditsUsd: '1', subscription: 'active' });
    const revoked = await newKey(accountId);
    const expired = await newKey(accountId);
    await firstRequests(revoked.key, 'gone');
    expect((await suite.admin.request('DELETE', `/keys/${revoked.id}`)).status).toBe(200);
    expect((await suite.admin.request('PATCH', `/keys/${expired.id}`, { expires_at: '2020-01-01' })).status).toBe(200);
    for (const route of ROUTES) {
      for (const gone of [revoked, expired]) {
        const refused = await send(gone.key, route, JSON.stringify(route.body), idemKey('gone', route));
        expect({ path: route.path, status: refused.status, replayed: refused.replayed }).toEqual({ path: route.path, status: 401, replayed: null });
        expect(errorOf(route, refused)).toMatchObject({ code: 'invalid_api_key' });
      }
      // The answer is kept: the account's live key gets it.
      expect((await send(key, route, JSON.stringify(route.body), idemKey('gone', route))).replayed).toBe('true');
    }
    expect(suite.fake.requests).toHaveLength(ROUTES.length);
  });

  it('refuses a speech replay once the subscription has ended: 402 subscription_required', async () => {
    const { accountId, key } = await suite.admin.createAccount({ subscription: 'active' });
    const speech = ROUTES.find((r) => r.path === '/v1/audio/speech')!;
    expect((await send(key, speech, JSON.stringify(speech.body), 'ended')).status).toBe(200);
    expect((await suite.admin.request('PUT', `/accounts/${accountId}/subscription`, { status: 'none' })).status).toBe(200);
    const refused = await send(key, speech, JSON.stringify(speech.body), 'ended');
    expect({ status: refused.status, replayed: refused.replayed }).toEqual({ status: 402, replayed: null });
    expect(errorOf(speech, refused)).toMatchObject({ code: 'subscription_required' });
    expect(suite.fake.requests).toHaveLength(1);
  });
});
