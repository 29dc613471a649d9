import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { readFileSync } from 'node:fs';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, moneyOf, PricedModel, postChat, postJson, sdk, waitForUsageRows } from './support/chat-support';
import { FakeAnthropic } from './support/fake-anthropic';
import { FakeAzureOpenAI } from './support/fake-azure-openai';
import { FakeBedrock } from './support/fake-bedrock';
import { FakeGemini } from './support/fake-gemini';
import { FakeUpstream, openAiUnauthorized, startFakeUpstream } from './support/fake-upstream';
import { anthropic, postMessages } from './support/messages-support';
import { OwnGateway, startOwnGateway } from './support/own-gateway';
import { postResponses } from './support/responses-support';
import { callsTo, RoutedModel, useRoutingGateway } from './support/routing-support';
import { RawConfig, TestApp } from './support/test-app';

/**
 * An upstream that refuses the gateway's own credential (its 401/403) is the operator's fault, never the client's
 * (issue 43, DESIGN.md section 12.3): 502 upstream_error with the gateway's own message naming the provider, never the
 * upstream's (OpenAI's quotes part of the key), counted by the circuit, tried on another deployment, logged at
 * error. And when retries give up on upstream 429s, the answer carries the upstream's Retry-After.
 */

/** The key the gateway is configured with: one the upstreams do not accept. OpenAI quotes it back masked. */
const WRONG_KEY = 'sk-proj-GATEWAYwrongKEY0123456789abcdefQRSTUVWXyzKQ';
/** What of WRONG_KEY OpenAI's 401 quotes: no part of it may reach a client. */
const KEY_FRAGMENTS = [WRONG_KEY.slice(0, 8), WRONG_KEY.slice(-4)];
const RIGHT_KEY = 'sk-proj-the-upstreams-own-key';
const UPSTREAM_MESSAGE = openAiUnauthorized(WRONG_KEY).error.message;
process.env.CREDENTIALS_WRONG_KEY = WRONG_KEY;

const price = { input: 2, output: 100, maxOutput: 4096 };
/** Provider `a` alone: every attempt refused. A high threshold: its circuit stays closed through the whole file. */
const KEYED: RoutedModel = { id: 'keyed', ...price, failure_threshold: 1000, deployments: [{ upstream: 'a', model: 'keyed-a' }] };
/** `a` first, refusing; `b` serves. The circuit of `a` opens after two refusals. */
const FAILOVER: RoutedModel = {
  id: 'keyed-failover', ...price, failure_threshold: 2, cooldown_s: 30,
  deployments: [{ upstream: 'a', model: 'fo-a' }, { upstream: 'b', model: 'fo-b', priority: 1 }],
};
type Route = 'chat' | 'stream' | 'responses' | 'messages';
const ROUTES: Route[] = ['chat', 'stream', 'responses', 'messages'];
/** A model per route whose two deployments both answer 429: each test's circuits of its own (Retry-After opens them). */
const limited = (route: Route): RoutedModel => ({ id: `limited-${route}`, ...price, deployments: [{ upstream: 'a', model: `lim-${route}-a` }, { upstream: 'b', model: `lim-${route}-b` }] });

const CLAUDE: PricedModel = { id: 'cred-claude', ...price };
const GEMINI: PricedModel = { id: 'cred-gemini', ...price };
const BEDROCK: PricedModel = { id: 'cred-bedrock', ...price };
const AZURE: PricedModel = { id: 'cred-azure', ...price };

/** One request on `route`, as a client sends it; the answer read whole. */
async function ask(gw: TestApp, key: string, route: Route, model: string, stream = route === 'stream'): Promise<{ status: number; retryAfter: string | null; body: any }> {
  const messages = [{ role: 'user' as const, content: 'hi' }];
  const res =
    route === 'responses' ? await postResponses(gw, key, { model, input: 'hi', stream })
    : route === 'messages' ? await postMessages(gw, key, { model, max_tokens: 50, messages, stream })
    : await postChat(gw, key, { model, messages, stream });
  const text = await res.text();
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: JSON.parse(text) };
}

/** 502 upstream_error in the route's envelope, naming the provider, quoting neither the upstream nor the key. */
function expectCredentialsRefused(answer: { status: number; body: any }, route: Route, provider: string): void {
  expect(answer.status).toBe(502);
  const { error } = answer.body;
  if (route === 'messages') expect(answer.body.type).toBe('error');
  expect(error).toMatchObject({ code: 'upstream_error', type: 'api_error' });
  expect(error.message).toContain(`"${provider}"`);
  expect(error.message).toMatch(/refused the gateway's credentials/);
  for (const fragment of KEY_FRAGMENTS) expect(JSON.stringify(answer.body)).not.toContain(fragment);
}

describe('upstream credentials refused, and upstream 429s given up', () => {
  let claude: FakeAnthropic, gemini: FakeGemini, bedrock: FakeBedrock, azure: FakeAzureOpenAI;
  beforeAll(async () => {
    [claude, gemini, bedrock, azure] = await Promise.all([new FakeAnthropic().start(), new FakeGemini().start(), new FakeBedrock().start(), new FakeAzureOpenAI().start()]);
  });
  const suite = useRoutingGateway([KEYED, FAILOVER, ...ROUTES.map(limited)], (raw: RawConfig) => {
    const timeouts = { connect_ms: 1000, request_ms: 10_000 };
    raw.providers.a.api_key_env = 'CREDENTIALS_WRONG_KEY';
    raw.providers.claude = { type: 'anthropic', base_url: claude.url, api_key_env: 'CREDENTIALS_WRONG_KEY', timeouts };
    raw.providers.google = { type: 'gemini', base_url: gemini.url, api_key_env: 'CREDENTIALS_WRONG_KEY', timeouts };
    raw.providers.aws = { type: 'bedrock', region: bedrock.region, base_url: bedrock.url, access_key_id_env: 'CREDENTIALS_WRONG_KEY', secret_access_key_env: 'CREDENTIALS_WRONG_KEY', timeouts };
    raw.providers.azure = { type: 'azure-openai', base_url: azure.url, api_version: '2024-10-21', api_key_env: 'CREDENTIALS_WRONG_KEY', timeouts };
    raw.catalog.push(chatCatalogEntry(CLAUDE, { provider: 'claude', upstream_model: 'claude-sonnet-4-5' }));
    raw.catalog.push(chatCatalogEntry(GEMINI, { provider: 'google', upstream_model: 'gemini-2.5-flash' }));
    raw.catalog.push(chatCatalogEntry(BEDROCK, { provider: 'aws', upstream_model: 'anthropic.claude-sonnet-4-5-20250929-v1:0' }));
    raw.catalog.push(chatCatalogEntry(AZURE, { provider: 'azure', upstream_model: 'gpt-4o-prod' }));
    raw.catalog.push({ id: 'keyed-tts', kind: 'speech', provider: 'a', upstream_model: 'tts-1', voices: ['alloy'] });
  });
  beforeEach(() => {
    suite.a.apiKey = RIGHT_KEY;
    for (const fake of [claude, gemini, bedrock, azure]) fake.resetState();
  });
  afterAll(async () => {
    await Promise.all([claude, gemini, bedrock, azure].map((fake) => fake?.close()));
  });

  it.each(ROUTES)('%s: an upstream 401 is 502 upstream_error naming the provider, its message and the key not quoted, nothing charged', async (route) => {
    const { a, gw, admin, db } = suite;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const answer = await ask(gw, key, route, KEYED.id);
    expectCredentialsRefused(answer, route, 'a');
    expect(JSON.stringify(answer.body)).not.toContain(UPSTREAM_MESSAGE.slice(0, 28));
    expect(callsTo(a, 'keyed-a')).toBe(1);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, reserved: 0n, charges: [], openHolds: 0 });
    const [row] = await waitForUsageRows(db, accountId, 1);
    expect(row).toMatchObject({ status: 502, error_code: 'upstream_error', cost_micros: '0' });
  });

  it("reaches the SDKs as the upstream's failure, not as the client's bad key", async () => {
    const { gw, admin } = suite;
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const openai = await sdk(gw, key).chat.completions.create({ model: KEYED.id, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(openai).toBeInstanceOf(OpenAI.InternalServerError);
    expect(openai).not.toBeInstanceOf(OpenAI.AuthenticationError);
    const claudeSdk = await anthropic(gw, key).messages.create({ model: KEYED.id, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(claudeSdk).toBeInstanceOf(Anthropic.InternalServerError);
  });

  it.each<[string, PricedModel, Route, boolean, string]>([
    ['anthropic (401 authentication_error), translated', CLAUDE, 'chat', false, 'claude'],
    ['anthropic (401), Messages passed through', CLAUDE, 'messages', false, 'claude'],
    ['anthropic (401), a Messages stream passed through', CLAUDE, 'messages', true, 'claude'],
    ['gemini (400 API_KEY_INVALID), streamed', GEMINI, 'chat', true, 'google'],
    ['bedrock (403 UnrecognizedClientException)', BEDROCK, 'chat', false, 'aws'],
    ['azure-openai (401), Responses', AZURE, 'responses', false, 'azure'],
  ])('%s: 502 upstream_error naming the provider, nothing charged', async (_, model, route, stream, provider) => {
    const { gw, admin, db } = suite;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const answer = await ask(gw, key, route, model.id, stream);
    expectCredentialsRefused(answer, route, provider);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, charges: [], openHolds: 0 });
  });

  it('count_tokens passed through to Anthropic and speech: the same 502 upstream_error naming the provider', async () => {
    const { gw, admin } = suite;
    const { key } = await admin.createAccount({ creditsUsd: '1', subscription: 'active' });
    const counted = await postMessages(gw, key, { model: CLAUDE.id, messages: [{ role: 'user', content: 'hi' }] }, '/v1/messages/count_tokens');
    expectCredentialsRefused({ status: counted.status, body: await counted.json() }, 'messages', 'claude');
    const speech = await postJson(gw, key, '/v1/audio/speech', { model: 'keyed-tts', input: 'Hello.', voice: 'alloy' });
    expectCredentialsRefused({ status: speech.status, body: await speech.json() }, 'chat', 'a');
  });

  it('tries the next deployment (its own credential), and the circuit counts the refusals', async () => {
    const { a, b, gw, admin } = suite;
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    for (let i = 0; i < 3; i++) expect((await ask(gw, key, 'chat', FAILOVER.id)).status).toBe(200);
    // Two refusals opened the circuit of `a` (failure_threshold 2): the third request went to `b` alone.
    expect([callsTo(a, 'fo-a'), callsTo(b, 'fo-b')]).toEqual([2, 3]);
    const { body } = await admin.request<{ data: any[] }>('GET', '/upstreams');
    expect(body.data).toEqual(expect.arrayContaining([expect.objectContaining({ model: FAILOVER.id, deployment: 'a/fo-a', state: 'open', error_rate: 1 })]));
  });

  it.each(ROUTES)('%s: upstream 429s on every deployment answer 429 with the upstream\'s Retry-After', async (route) => {
    const { a, b, gw, admin, db } = suite;
    a.apiKey = null;
    const model = limited(route);
    for (const [fake, d] of [[a, model.deployments[0]], [b, model.deployments[1]]] as const) {
      fake.failureByModel[d.model] = 'status429';
      fake.retryAfterS = 7;
    }
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const answer = await ask(gw, key, route, model.id);
    expect(answer.status).toBe(429);
    expect(answer.retryAfter).toBe('7');
    expect(answer.body.error).toMatchObject({ code: 'upstream_rejected' });
    expect(callsTo(a, model.deployments[0].model) + callsTo(b, model.deployments[1].model)).toBe(2);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, charges: [], openHolds: 0 });
  });

  it("Messages passed through to Anthropic: its 429's retry-after reaches the client", async () => {
    const { gw, admin } = suite;
    claude.apiKey = WRONG_KEY;
    claude.retryAfterS = 7;
    claude.failNext('status429');
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const answer = await ask(gw, key, 'messages', CLAUDE.id);
    expect(answer.status).toBe(429);
    expect(answer.retryAfter).toBe('7');
    expect(answer.body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', code: 'upstream_rejected' } });
  });
});

describe('upstream credentials refused: the operator reads it in the log, at error', () => {
  let fake: FakeUpstream, gw: OwnGateway;
  const MODEL: PricedModel = { id: 'logged-keyed', ...price };
  beforeAll(async () => {
    fake = await startFakeUpstream();
    fake.apiKey = RIGHT_KEY;
    gw = await startOwnGateway({
      logLevel: 'error',
      env: { OPENAI_API_KEY: WRONG_KEY },
      config: (raw) => {
        raw.providers.openai = { type: 'openai-compatible', base_url: fake.url, api_key_env: 'OPENAI_API_KEY' };
        raw.catalog.push(chatCatalogEntry(MODEL, { provider: 'openai', upstream_model: 'gpt-4o-mini' }));
      },
    });
  }, 120_000);
  afterAll(async () => {
    await gw?.stop();
    await fake?.close();
  });

  it('one line at error with the request id, the provider and its status; no part of the key, not the upstream\'s message', async () => {
    const { key } = await new AdminClient(gw.url).createAccount({ creditsUsd: '1' });
    const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(502);
    const requestId = res.headers.get('x-request-id')!;
    const deadline = Date.now() + 5000;
    let lines: any[] = [];
    while (Date.now() < deadline) {
      const text = readFileSync(gw.process.options.logFile, 'utf8');
      lines = text.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
      if (lines.some((line) => line.requestId === requestId)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const logged = lines.filter((line) => line.requestId === requestId);
    expect(logged).toEqual([expect.objectContaining({ level: 50, provider: 'openai', upstreamStatus: 401, msg: expect.stringContaining('"openai"') })]);
    const log = readFileSync(gw.process.options.logFile, 'utf8');
    for (const fragment of KEY_FRAGMENTS) expect(log).not.toContain(fragment);
    expect(log).not.toContain('Incorrect API key');
  });
});
