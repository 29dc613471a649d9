import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, moneyOf, PricedModel, sdk } from './support/chat-support';
import { FakeAnthropic } from './support/fake-anthropic';
import { FakeBedrock } from './support/fake-bedrock';
import { FakeGemini } from './support/fake-gemini';
import { anthropic } from './support/messages-support';
import { TestApp } from './support/test-app';
import { keyedProvider, UPSTREAM_TIMEOUTS, useUpstreamGateway } from './support/upstream-gateway';

/**
 * One catalog model served by Claude on Anthropic and on Bedrock (issue 34, DESIGN.md section 11): a model's
 * deployments may mix native types; a throttled or overloaded first deployment is served by the other type,
 * charged once; a Messages client's body still reaches the `anthropic` deployment as sent.
 */
const CLAUDE: PricedModel = { id: 'claude-anywhere', input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75, maxOutput: 4096 };
const BEDROCK_FIRST: PricedModel = { ...CLAUDE, id: 'claude-bedrock-first' };
const GEMINI_FIRST: PricedModel = { ...CLAUDE, id: 'gemini-then-claude' };

describe('deployments of different native types', () => {
  let claude: FakeAnthropic, bedrock: FakeBedrock, gemini: FakeGemini, gw: TestApp, admin: AdminClient, db: DataSource;

  useUpstreamGateway({
    fakes: async () => ({ claude: await new FakeAnthropic().start(), bedrock: await new FakeBedrock().start(), gemini: await new FakeGemini().start() }),
    config: (fakes, raw) => {
      process.env.MIXED_AWS_KEY_ID = fakes.bedrock.accessKeyId;
      process.env.MIXED_AWS_SECRET = fakes.bedrock.secretAccessKey;
      raw.providers.claude = keyedProvider('anthropic', fakes.claude.url, 'MIXED_ANTHROPIC_KEY', fakes.claude.apiKey);
      raw.providers.aws = { type: 'bedrock', region: fakes.bedrock.region, base_url: fakes.bedrock.url, access_key_id_env: 'MIXED_AWS_KEY_ID', secret_access_key_env: 'MIXED_AWS_SECRET', timeouts: UPSTREAM_TIMEOUTS };
      raw.providers.google = keyedProvider('gemini', fakes.gemini.url, 'MIXED_GEMINI_KEY', fakes.gemini.apiKey);
      const anthropicDeployment = (priority: number) => ({ provider: 'claude', upstream_model: 'claude-sonnet-4-5', priority });
      const bedrockDeployment = (priority: number) => ({ provider: 'aws', upstream_model: 'anthropic.claude-sonnet-4-5-20250929-v1:0', priority });
      raw.catalog.push(chatCatalogEntry(CLAUDE, { deployments: [anthropicDeployment(0), bedrockDeployment(1)] }));
      raw.catalog.push(chatCatalogEntry(BEDROCK_FIRST, { deployments: [bedrockDeployment(0), anthropicDeployment(1)] }));
      raw.catalog.push(chatCatalogEntry(GEMINI_FIRST, { deployments: [{ provider: 'google', upstream_model: 'gemini-2.5-flash', priority: 0 }, anthropicDeployment(1)] }));
    },
    ready: (suite) => ({ fakes: { claude, bedrock, gemini }, gw, admin, db } = suite),
  });

  it('serves a Gemini 429 RESOURCE_EXHAUSTED from Anthropic, streamed, charged once', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '5' });
    gemini.failNext('status429');
    const stream = await sdk(gw, key).chat.completions.create({ model: GEMINI_FIRST.id, stream: true, messages: [{ role: 'user', content: 'Hi' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toBe(FakeAnthropic.defaultReply().text);
    expect(gemini.requests).toHaveLength(1);
    expect(claude.requests).toHaveLength(1);
    expect(claude.requests[0].body).toMatchObject({ model: 'claude-sonnet-4-5', stream: true, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }] });
    const money = await moneyOf(db, accountId);
    expect(money.charges).toHaveLength(1);
    expect(money.ledgerSum).toBe(money.balance);
  });

  it('serves an Anthropic 529 from Bedrock (chat, then Messages), each charged once', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '5' });
    claude.failNext('status529');
    const completion = await sdk(gw, key).chat.completions.create({ model: CLAUDE.id, messages: [{ role: 'user', content: 'Hi' }] });
    expect(completion.choices[0].message.content).toBe(bedrock.reply.text);
    expect(claude.requests).toHaveLength(1);
    expect(bedrock.requests).toHaveLength(1);
    expect(bedrock.requests[0].signatureValid).toBe(true);

    claude.failNext('status529');
    const message = await anthropic(gw, key).messages.create({ model: CLAUDE.id, max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }] });
    expect(message.content[0]).toMatchObject({ type: 'text', text: bedrock.reply.text });
    expect(bedrock.requests).toHaveLength(2);
    expect(bedrock.requests[1].body.messages).toEqual([{ role: 'user', content: [{ text: 'Hello' }] }]);
    const money = await moneyOf(db, accountId);
    expect(money.charges).toHaveLength(2);
    expect(money.ledgerSum).toBe(money.balance);
    expect(money.reserved).toBe(0n);
  });

  it('serves a Bedrock ThrottlingException from Anthropic, where a Messages body arrives as the client sent it', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '5' });
    bedrock.failNext('throttling');
    const body = { model: BEDROCK_FIRST.id, max_tokens: 200, system: [{ type: 'text' as const, text: 'Be brief.', cache_control: { type: 'ephemeral' as const } }], messages: [{ role: 'user' as const, content: 'Hi' }] };
    const message = await anthropic(gw, key).messages.create(body);
    expect(message.content[0]).toMatchObject({ type: 'text', text: FakeAnthropic.defaultReply().text });
    expect(bedrock.requests).toHaveLength(1);
    expect(claude.requests).toHaveLength(1);
    expect(claude.requests[0].body).toEqual({ ...body, model: 'claude-sonnet-4-5' });
    const money = await moneyOf(db, accountId);
    expect(money.charges).toHaveLength(1);
    expect(money.ledgerSum).toBe(money.balance);
  });
});
