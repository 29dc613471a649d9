import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, moneyOf, postChat, postJson, PricedModel, readSseData, sdk, upstreamModelOf } from './support/chat-support';
import { FakeAnthropic } from './support/fake-anthropic';
import { fakeOpenAiProvider, FakeUpstream } from './support/fake-upstream';
import { anthropic, postMessages } from './support/messages-support';
import { postResponses } from './support/responses-support';
import { TestApp } from './support/test-app';
import { keyedProvider, useUpstreamGateway } from './support/upstream-gateway';

/**
 * Never forwarded unpriced (issue 45, DESIGN.md section 12.2): an option that changes the upstream's price (OpenAI's
 * `service_tier`, Anthropic's `speed` with its fast-mode beta, `inference_geo`) is refused with 400
 * `unsupported_parameter` naming it when the model does not price it, before any hold or upstream call, on every
 * route; a priced one reaches the upstream as sent. Chat completions send `store` as false.
 */
const PRICES = { input: 2, output: 8, maxOutput: 4096 };
/** OpenAI-shaped, with OpenAI's sheet: Fast (priority) at 2×, Flex at ½. */
const TIERED: PricedModel = { id: 'po-tiered', ...PRICES };
/** OpenAI-shaped, flat prices only. */
const FLAT: PricedModel = { id: 'po-flat', ...PRICES };
/** Anthropic, passed through, with Anthropic's sheet: fast mode 6×, US-only inference 1.1×. */
const CLAUDE: PricedModel = { id: 'po-claude', ...PRICES };
/** Anthropic, passed through, flat prices only. */
const CLAUDE_FLAT: PricedModel = { id: 'po-claude-flat', ...PRICES };

const OPENAI_SHEET = [{ when: { service_tier: ['priority', 'fast'] }, multiplier: 2 }, { when: { service_tier: 'flex' }, multiplier: 0.5 }];
const ANTHROPIC_SHEET = [{ when: { speed: 'fast' }, multiplier: 6 }, { when: { inference_geo: 'us' }, multiplier: 1.1 }];
const CREDITS = 1_000_000n;
const HEADER = 'x-gateway-ignored-params';
const FAST_MODE = 'fast-mode-2026-02-01';
const USER = [{ role: 'user', content: 'Hello' }];

describe('price-changing options: refused unless priced, forwarded as sent when priced (issue 45)', () => {
  let openai: FakeUpstream, claude: FakeAnthropic, gw: TestApp, admin: AdminClient, db: DataSource;
  useUpstreamGateway({
    fakes: async () => ({ openai: await new FakeUpstream().start(), claude: await new FakeAnthropic().start() }),
    config: (fakes, raw) => {
      raw.providers.fake = fakeOpenAiProvider(fakes.openai.url);
      raw.providers.claude = keyedProvider('anthropic', fakes.claude.url, 'PRICE_OPTIONS_ANTHROPIC_KEY', 'sk-ant-fake-key');
      const openAiServed = (m: PricedModel) => ({ provider: 'fake', upstream_model: upstreamModelOf(m) });
      raw.catalog.push({ ...chatCatalogEntry(TIERED, openAiServed(TIERED)), price_variants: OPENAI_SHEET });
      raw.catalog.push(chatCatalogEntry(FLAT, openAiServed(FLAT)));
      raw.catalog.push({ ...chatCatalogEntry(CLAUDE, { provider: 'claude', upstream_model: 'claude-opus-4-6' }), price_variants: ANTHROPIC_SHEET });
      raw.catalog.push(chatCatalogEntry(CLAUDE_FLAT, { provider: 'claude', upstream_model: 'claude-opus-4-6' }));
    },
    ready: (suite) => ({ fakes: { openai, claude }, gw, admin, db } = suite),
  });

  const account = () => admin.createAccount({ creditsUsd: '1' });

  /** The answer is 400 unsupported_parameter naming `param` (in OpenAI's envelope, or Anthropic's for `anthropic`). */
  async function expectRefused(res: Response, param: string, envelope: 'openai' | 'anthropic' = 'openai'): Promise<void> {
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    if (envelope === 'anthropic') expect(body.type).toBe('error');
    const error = body.error;
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_parameter', param });
    expect(error.message).toContain(param);
  }

  /** No upstream saw a request, and nothing was held or charged. */
  async function expectUntouched(accountId: string): Promise<void> {
    expect(openai.requests).toHaveLength(0);
    expect(claude.requests).toHaveLength(0);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: CREDITS, reserved: 0n, ledgerSum: CREDITS, charges: [], openHolds: 0 });
  }

  /** The one request that reached the fake OpenAI, as it received it. */
  function sentToOpenAi(): any {
    expect(openai.requests).toHaveLength(1);
    return openai.requests[0].body;
  }

  describe('chat completions', () => {
    it.each([false, true])('refuses a tier, a speed or a region the model does not price (stream: %s): nothing sent, nothing held', async (stream) => {
      const { accountId, key } = await account();
      const cases: [string, Record<string, unknown>, string][] = [
        [FLAT.id, { service_tier: 'priority' }, 'service_tier'],
        [TIERED.id, { service_tier: 'scale' }, 'service_tier'],
        [TIERED.id, { speed: 'fast' }, 'speed'],
        [TIERED.id, { inference_geo: 'us' }, 'inference_geo'],
      ];
      for (const [model, fields, param] of cases) await expectRefused(await postChat(gw, key, { model, messages: USER, stream, ...fields }), param);
      await expectUntouched(accountId);
    });

    it('sends a priced tier as sent, JSON through the SDK and streamed', async () => {
      const { key } = await account();
      const answer = await sdk(gw, key).chat.completions.create({ model: TIERED.id, messages: [{ role: 'user', content: 'Hello' }], service_tier: 'priority' });
      expect(answer.choices[0].message.content).toBe('Hello from the fake upstream.');
      expect(sentToOpenAi()).toMatchObject({ model: upstreamModelOf(TIERED), service_tier: 'priority' });
      openai.resetState();
      const res = await postChat(gw, key, { model: TIERED.id, messages: USER, stream: true, service_tier: 'flex' });
      expect(res.status).toBe(200);
      expect((await readSseData(res)).at(-1)).toBe('[DONE]');
      expect(sentToOpenAi()).toMatchObject({ stream: true, service_tier: 'flex' });
    });

    it('sends a standard tier as sent on a model without variants', async () => {
      const { key } = await account();
      const res = await postChat(gw, key, { model: FLAT.id, messages: USER, service_tier: 'default' });
      expect(res.status).toBe(200);
      expect(sentToOpenAi().service_tier).toBe('default');
    });

    it.each([false, true])('sends store: true as false and names store in x-gateway-ignored-params (stream: %s)', async (stream) => {
      const { key } = await account();
      const res = await postChat(gw, key, { model: FLAT.id, messages: USER, stream, store: true });
      expect(res.status).toBe(200);
      expect(res.headers.get(HEADER)).toBe('store');
      await res.text();
      expect(sentToOpenAi().store).toBe(false);
    });

    it('names nothing for store: false, and sends a body without store as it came', async () => {
      const { key } = await account();
      const kept = await sdk(gw, key).chat.completions.create({ model: FLAT.id, messages: [{ role: 'user', content: 'Hello' }], store: false }).withResponse();
      expect(kept.response.headers.has(HEADER)).toBe(false);
      expect(sentToOpenAi().store).toBe(false);
      openai.resetState();
      const plain = await postChat(gw, key, { model: FLAT.id, messages: USER });
      expect(plain.headers.has(HEADER)).toBe(false);
      expect(sentToOpenAi()).not.toHaveProperty('store');
    });
  });

  describe('Responses API', () => {
    it('refuses a tier the model does not price: nothing sent, nothing held', async () => {
      const { accountId, key } = await account();
      await expectRefused(await postResponses(gw, key, { model: FLAT.id, input: 'Hello', service_tier: 'flex' }), 'service_tier');
      await expectRefused(await postResponses(gw, key, { model: TIERED.id, input: 'Hello', stream: true, service_tier: 'scale' }), 'service_tier');
      await expectUntouched(accountId);
    });

    it('carries a priced tier to the chat upstream, not named as ignored; a standard one is ignored as before', async () => {
      const { key } = await account();
      const priced = await sdk(gw, key).responses.create({ model: TIERED.id, input: 'Hello', service_tier: 'priority' }).withResponse();
      expect(priced.data.output_text).toBe('Hello from the fake upstream.');
      expect(priced.response.headers.has(HEADER)).toBe(false);
      expect(sentToOpenAi()).toMatchObject({ model: upstreamModelOf(TIERED), service_tier: 'priority' });
      openai.resetState();
      const standard = await postResponses(gw, key, { model: TIERED.id, input: 'Hello', service_tier: 'default' });
      expect(standard.status).toBe(200);
      expect(standard.headers.get(HEADER)).toBe('service_tier');
      expect(sentToOpenAi()).not.toHaveProperty('service_tier');
    });
  });

  describe('Messages API, translated to a chat upstream', () => {
    it("refuses an option the model does not price, in Anthropic's envelope: nothing sent, nothing held", async () => {
      const { accountId, key } = await account();
      const hello = { max_tokens: 64, messages: USER };
      await expectRefused(await postMessages(gw, key, { model: FLAT.id, ...hello, service_tier: 'priority' }), 'service_tier', 'anthropic');
      await expectRefused(await postMessages(gw, key, { model: TIERED.id, ...hello, speed: 'fast' }), 'speed', 'anthropic');
      await expectRefused(await postMessages(gw, key, { model: TIERED.id, ...hello, stream: true, inference_geo: 'us' }), 'inference_geo', 'anthropic');
      const beta = await postJson(gw, key, '/v1/messages', { model: TIERED.id, ...hello }, {
        headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'anthropic-beta': FAST_MODE, 'content-type': 'application/json' },
      });
      await expectRefused(beta, 'anthropic-beta', 'anthropic');
      await expectUntouched(accountId);
    });

    it('carries a priced tier to the chat upstream', async () => {
      const { key } = await account();
      const message = await anthropic(gw, key).messages.create({ model: TIERED.id, max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }], service_tier: 'priority' } as never);
      expect((message as any).content).toEqual([{ type: 'text', text: 'Hello from the fake upstream.' }]);
      expect(sentToOpenAi()).toMatchObject({ model: upstreamModelOf(TIERED), service_tier: 'priority' });
    });
  });

  describe('Messages API, passed through to Anthropic', () => {
    const hello = (model: string) => ({ model, max_tokens: 64, messages: USER });
    const withBeta = (key: string, beta: string) => ({ headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'anthropic-beta': beta, 'content-type': 'application/json' } });

    it("refuses fast mode, its beta or a region the model does not price, in Anthropic's envelope: nothing sent, nothing held", async () => {
      const { accountId, key } = await account();
      await expectRefused(await postJson(gw, key, '/v1/messages', { ...hello(CLAUDE_FLAT.id), speed: 'fast' }, withBeta(key, FAST_MODE)), 'speed', 'anthropic');
      await expectRefused(await postMessages(gw, key, { ...hello(CLAUDE_FLAT.id), inference_geo: 'us' }), 'inference_geo', 'anthropic');
      await expectRefused(await postMessages(gw, key, { ...hello(CLAUDE.id), inference_geo: 'eu' }), 'inference_geo', 'anthropic');
      await expectRefused(await postMessages(gw, key, { ...hello(CLAUDE.id), stream: true, service_tier: 'priority' }), 'service_tier', 'anthropic');
      // The beta alone asks for fast mode: refused on a model that does not price it, in a list of betas too.
      await expectRefused(await postJson(gw, key, '/v1/messages', hello(CLAUDE_FLAT.id), withBeta(key, `context-management-2025-06-27,${FAST_MODE}`)), 'anthropic-beta', 'anthropic');
      await expectUntouched(accountId);
    });

    it('sends priced fast mode with its beta, and a priced region, as the client sent them', async () => {
      const { key } = await account();
      const body = { ...hello(CLAUDE.id), speed: 'fast', inference_geo: 'us', service_tier: 'standard_only' };
      const res = await postJson(gw, key, '/v1/messages', body, withBeta(key, FAST_MODE));
      expect(res.status).toBe(200);
      expect(((await res.json()) as any).model).toBe(CLAUDE.id);
      expect(claude.requests).toHaveLength(1);
      const sent = claude.requests[0];
      expect(sent.body).toEqual({ ...body, model: 'claude-opus-4-6' });
      expect(sent.headers['anthropic-beta']).toBe(FAST_MODE);
      expect(openai.requests).toHaveLength(0);
    });

    it('streams a priced region through as sent', async () => {
      const { key } = await account();
      const res = await postMessages(gw, key, { ...hello(CLAUDE.id), stream: true, inference_geo: 'us' });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('event: message_stop');
      expect(claude.requests.map((r) => r.body)).toEqual([{ ...hello('claude-opus-4-6'), stream: true, inference_geo: 'us' }]);
    });
  });
});
