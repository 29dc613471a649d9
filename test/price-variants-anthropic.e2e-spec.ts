import Anthropic from '@anthropic-ai/sdk';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, PricedModel, sdk, waitForUsageRows } from './support/chat-support';
import { ClassPrices, costMicrosByClass } from './support/cost-oracle';
import { AnthropicUsage, FakeAnthropic } from './support/fake-anthropic';
import { anthropic } from './support/messages-support';
import { TestApp } from './support/test-app';
import { expectChargedExactly, keyedProvider, useUpstreamGateway } from './support/upstream-gateway';

/**
 * Anthropic's price options as its answers report them (DESIGN.md section 12.2): fast mode (`usage.speed`, with
 * its beta header), US-only inference (`usage.inference_geo`) and long context counting cache reads and writes,
 * on Messages passed through (JSON and streamed) and on chat completions translated; a downgrade billed as it ran.
 * Web search fees: claude-code-web-search.e2e-spec.ts.
 */
const KEY_ENV = 'PRICE_VARIANTS_ANTHROPIC_KEY';
const FAST_MODE = 'fast-mode-2026-02-01';
/** Claude Opus 4.6's prices. */
const PRICES: ClassPrices = { input: 5, output: 25, cachedInput: 0.5, cacheWrite: 6.25, cacheWrite1h: 10 };
const OPUS: PricedModel = { id: 'opus-sheet', ...PRICES, maxOutput: 8192 };
/** Long context from this many input tokens, low so that a cached system prompt passes it. */
const LONG_OVER = 1000;
const LONG: ClassPrices = { input: 10, output: 37.5, cachedInput: 1, cacheWrite: 12.5, cacheWrite1h: 20 };
const SHEET = {
  price_variants: [
    { when: { prompt_tokens_over: LONG_OVER }, input_price_per_million: 10, output_price_per_million: 37.5, cached_input_price_per_million: 1, cache_write_price_per_million: 12.5, cache_write_1h_price_per_million: 20 },
    { when: { speed: 'fast' }, multiplier: 6 },
    { when: { inference_geo: 'us' }, multiplier: 1.1 },
  ],
};

const times = (prices: ClassPrices, m: number): ClassPrices =>
  Object.fromEntries(Object.entries(prices).map(([k, v]) => [k, v === undefined ? v : Math.round(v * m * 1e6) / 1e6])) as ClassPrices;

describe('anthropic price options', () => {
  let fake: FakeAnthropic, gw: TestApp, admin: AdminClient, db: DataSource;
  useUpstreamGateway({
    fakes: async () => ({ fake: await new FakeAnthropic().start() }),
    config: (fakes, raw) => {
      raw.providers.claude = keyedProvider('anthropic', fakes.fake.url, KEY_ENV, 'sk-ant-fake-key');
      raw.catalog.push({ ...chatCatalogEntry(OPUS, { provider: 'claude', upstream_model: 'claude-opus-4-6' }), ...SHEET });
    },
    ready: (suite) => ({ fakes: { fake }, gw, admin, db } = suite),
  });

  const classTokens = (usage: AnthropicUsage) => ({
    prompt: usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens,
    completion: usage.output_tokens,
    cached: usage.cache_read_input_tokens,
    cacheWrite: usage.cache_creation_input_tokens,
    cacheWrite1h: usage.cache_creation.ephemeral_1h_input_tokens,
  });

  /** The one request's charge is its answered usage at `prices`, exactly, and its record names `variants`. */
  async function expectCharged(accountId: string, prices: ClassPrices, variants: unknown): Promise<void> {
    const usage = fake.requests.find((r) => r.answered)!.answered!.usage;
    await expectChargedExactly(db, accountId, costMicrosByClass(prices, classTokens(usage)));
    const [row] = await waitForUsageRows(db, accountId, 1);
    const [record] = await db.query(`SELECT price_variants FROM usage_records WHERE request_id = $1`, [row.request_id]);
    expect(record.price_variants).toEqual(variants);
  }

  const fastClient = (key: string) => anthropic(gw, key, { headers: { 'anthropic-beta': FAST_MODE } });
  const question = { model: OPUS.id, max_tokens: 512, messages: [{ role: 'user' as const, content: 'How fast is fast mode?' }] };

  it.each([false, true])('charges fast mode at 6× on Messages passed through (streamed: %s)', async (stream) => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    const body = { ...question, speed: 'fast' } as Anthropic.MessageCreateParamsNonStreaming;
    if (stream) await fastClient(key).messages.stream(body).finalMessage();
    else expect(((await fastClient(key).messages.create(body)).usage as any).speed).toBe('fast');
    expect(fake.requests[0].body.speed).toBe('fast');
    expect(fake.requests[0].headers['anthropic-beta']).toBe(FAST_MODE);
    await expectCharged(accountId, times(PRICES, 6), [{ speed: 'fast' }]);
  });

  it.each([false, true])('charges US-only inference at 1.1× and fast mode with it at 6.6× (streamed: %s)', async (stream) => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    const body = { ...question, speed: 'fast', inference_geo: 'us' } as Anthropic.MessageCreateParamsNonStreaming;
    if (stream) await fastClient(key).messages.stream(body).finalMessage();
    else expect(((await fastClient(key).messages.create(body)).usage as any).inference_geo).toBe('us');
    await expectCharged(accountId, times(PRICES, 6.6), [{ speed: 'fast' }, { inference_geo: 'us' }]);
  });

  it.each([false, true])('bills fast mode run at standard speed as it ran (streamed: %s)', async (stream) => {
    fake.fastModeDowngrade = true;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    const body = { ...question, speed: 'fast' } as Anthropic.MessageCreateParamsNonStreaming;
    if (stream) await fastClient(key).messages.stream(body).finalMessage();
    else expect(((await fastClient(key).messages.create(body)).usage as any).speed).toBe('standard');
    await expectCharged(accountId, PRICES, null);
  });

  it.each([false, true])('forwards a chat client’s fast mode with its beta header, and charges it (streamed: %s)', async (stream) => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    // `speed` is Anthropic's field, which the openai SDK's types do not know: sent as an extra body field.
    const body = { model: OPUS.id, messages: [{ role: 'user' as const, content: 'How fast is fast mode?' }], max_tokens: 512 };
    if (stream) for await (const _ of await sdk(gw, key).chat.completions.create({ ...body, stream: true }, { body: { ...body, stream: true, speed: 'fast' } })) void _;
    else await sdk(gw, key).chat.completions.create(body, { body: { ...body, speed: 'fast' } });
    expect(fake.requests[0].body.speed).toBe('fast');
    expect(fake.requests[0].headers['anthropic-beta']).toBe(FAST_MODE);
    await expectCharged(accountId, times(PRICES, 6), [{ speed: 'fast' }]);
  });

  it.each([false, true])('reprices the whole request once cache writes take the input past the threshold (streamed: %s)', async (stream) => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    const body: Anthropic.MessageCreateParamsNonStreaming = {
      ...question,
      system: [{ type: 'text', text: 'You answer questions about fast mode, briefly. '.repeat(200), cache_control: { type: 'ephemeral' } }],
    };
    if (stream) await anthropic(gw, key).messages.stream(body).finalMessage();
    else await anthropic(gw, key).messages.create(body);
    const usage = fake.requests[0].answered!.usage;
    // The plain input alone is under the threshold: the cache writes count toward it.
    expect(usage.input_tokens).toBeLessThan(LONG_OVER);
    expect(usage.input_tokens + usage.cache_creation_input_tokens).toBeGreaterThan(LONG_OVER);
    await expectCharged(accountId, LONG, [{ prompt_tokens_over: LONG_OVER }]);
  });
});
