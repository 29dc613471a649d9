import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, PricedModel, sdk, waitForUsageRows } from './support/chat-support';
import { costMicrosByClass } from './support/cost-oracle';
import { FakeBedrock } from './support/fake-bedrock';
import { FakeGemini } from './support/fake-gemini';
import { TestApp } from './support/test-app';
import { expectChargedExactly, keyedProvider, UPSTREAM_TIMEOUTS, useUpstreamGateway } from './support/upstream-gateway';

/**
 * Service tiers as Gemini and Bedrock report them (DESIGN.md section 12.2): Gemini's `x-gemini-service-tier`
 * header, Bedrock's `serviceTier` in the Converse answer and ConverseStream's metadata event, each charged at the
 * catalog's variant for that tier, JSON and streamed, and a downgrade billed as it ran.
 */
const KEY_ENV = 'PRICE_VARIANTS_GEMINI_KEY';
const KEY_ID_ENV = 'PRICE_VARIANTS_AWS_KEY_ID';
const SECRET_ENV = 'PRICE_VARIANTS_AWS_SECRET';
const PRICES = { input: 1.25, output: 10 };
const GEMINI: PricedModel = { id: 'tiered-gemini', ...PRICES, maxOutput: 8192 };
const BEDROCK: PricedModel = { id: 'tiered-bedrock', ...PRICES, maxOutput: 8192 };
const TIERS = {
  price_variants: [
    { when: { service_tier: 'priority' }, multiplier: 1.8 },
    { when: { service_tier: 'flex' }, multiplier: 0.5 },
  ],
};

describe('service tiers reported by Gemini and Bedrock', () => {
  let gemini: FakeGemini, bedrock: FakeBedrock, gw: TestApp, admin: AdminClient, db: DataSource;

  useUpstreamGateway({
    fakes: async () => ({ gemini: await new FakeGemini().start(), bedrock: await new FakeBedrock().start() }),
    config: (fakes, raw) => {
      raw.providers.gemini = keyedProvider('gemini', fakes.gemini.url, KEY_ENV, 'AIzaSyFake-gemini-key');
      process.env[KEY_ID_ENV] = fakes.bedrock.accessKeyId;
      process.env[SECRET_ENV] = fakes.bedrock.secretAccessKey;
      raw.providers.aws = { type: 'bedrock', region: fakes.bedrock.region, base_url: fakes.bedrock.url, access_key_id_env: KEY_ID_ENV, secret_access_key_env: SECRET_ENV, timeouts: UPSTREAM_TIMEOUTS };
      raw.catalog.push({ ...chatCatalogEntry(GEMINI, { provider: 'gemini', upstream_model: 'gemini-2.5-flash' }), ...TIERS });
      raw.catalog.push({ ...chatCatalogEntry(BEDROCK, { provider: 'aws', upstream_model: 'anthropic.claude-sonnet-4-5-20250929-v1:0' }), ...TIERS });
    },
    ready: (suite) => ({ fakes: { gemini, bedrock }, gw, admin, db } = suite),
  });

  /** The charge of the request's recorded tokens at the prices × `multiplier`, rounded up once (the tests' oracle). */
  async function expectChargedAt(accountId: string, multiplier: number, variants: unknown): Promise<void> {
    const [row] = await waitForUsageRows(db, accountId, 1);
    expect(row.prompt_tokens).toBeGreaterThan(0);
    const prices = { input: PRICES.input * multiplier, output: PRICES.output * multiplier };
    await expectChargedExactly(db, accountId, costMicrosByClass(prices, { prompt: row.prompt_tokens, completion: row.completion_tokens }));
    const [record] = await db.query(`SELECT price_variants FROM usage_records WHERE request_id = $1`, [row.request_id]);
    expect(record.price_variants).toEqual(variants);
  }

  const cases = [
    { model: GEMINI.id, tier: 'priority', multiplier: 1.8, variants: [{ service_tier: 'priority' }] },
    { model: GEMINI.id, tier: 'flex', multiplier: 0.5, variants: [{ service_tier: 'flex' }] },
    { model: BEDROCK.id, tier: 'priority', multiplier: 1.8, variants: [{ service_tier: 'priority' }] },
    { model: BEDROCK.id, tier: 'flex', multiplier: 0.5, variants: [{ service_tier: 'flex' }] },
  ];

  it.each(cases.flatMap((c) => [false, true].map((stream) => ({ ...c, stream }))))(
    '$model asked $tier (streamed: $stream) is charged at the tier it reports',
    async ({ model, tier, multiplier, variants, stream }) => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      const body = { model, messages: [{ role: 'user' as const, content: 'A question about tiers?' }], service_tier: tier as 'priority' | 'flex' };
      if (stream) {
        for await (const _ of await sdk(gw, key).chat.completions.create({ ...body, stream: true })) void _;
      } else {
        await sdk(gw, key).chat.completions.create(body);
      }
      const sent = model === GEMINI.id ? gemini.requests[0].body.serviceTier : bedrock.requests[0].body.serviceTier;
      expect(sent).toEqual(model === GEMINI.id ? tier : { type: tier });
      await expectChargedAt(accountId, multiplier, variants);
    },
  );

  it.each([false, true])('bills a Gemini request asked priority and served at standard as it ran (streamed: %s)', async (stream) => {
    gemini.downgradePriority = true;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    const body = { model: GEMINI.id, messages: [{ role: 'user' as const, content: 'A question about tiers?' }], service_tier: 'priority' as const };
    if (stream) {
      for await (const _ of await sdk(gw, key).chat.completions.create({ ...body, stream: true })) void _;
    } else {
      await sdk(gw, key).chat.completions.create(body);
    }
    await expectChargedAt(accountId, 1, null);
  });
});
