import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, expectOneCharge, moneyOf, parseSseData, postChat, postJson, PricedModel, sdk, useGatewayWithFake, waitForUsageRows, withFakeProvider } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { anthropic } from './support/messages-support';
import { RawConfig, TEST_ADMIN_TOKEN } from './support/test-app';

/**
 * Prices as the upstream prices them (DESIGN.md section 12.2), on the routes an OpenAI-shaped upstream serves:
 * the tier the answer reports, the long-context reprice, the hold of the dearest outcome asked for, the
 * statement and /v1/usage naming the variants applied. Anthropic's options and server tools: price-variants-anthropic.e2e-spec.ts.
 */

// gpt-5's flat prices; its sheet as docs/configuration.md writes it, long context at 2,000 input tokens so that a
// small body passes it.
const TIERED: PricedModel = { id: 'tiered-chat', input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 4096 };
const LONG_CONTEXT_OVER = 2000;
const SHEET = {
  price_variants: [
    { when: { prompt_tokens_over: LONG_CONTEXT_OVER }, input_price_per_million: 2.5, cached_input_price_per_million: 0.25, output_price_per_million: 15 },
    { when: { service_tier: ['priority', 'fast'] }, multiplier: 2 },
    { when: { service_tier: 'flex' }, multiplier: 0.5 },
  ],
};
/** The same flat prices, no sheet: an answer at another tier than standard is unpriced here. */
const FLAT: PricedModel = { id: 'flat-chat', input: 1.25, output: 10, maxOutput: 4096 };
const CREDITS = 1_000_000n;
const PROMPT = 1000;
const COMPLETION = 100;
/** 1,000 × 1.25 + 100 × 10 µUSD. */
const STANDARD = 2250n;

function withSheet(url: string) {
  return (raw: RawConfig) => {
    withFakeProvider(url, [])(raw);
    raw.catalog.push({ ...chatCatalogEntry(TIERED, { provider: 'fake', upstream_model: 'gpt-5' }), ...SHEET });
    raw.catalog.push(chatCatalogEntry(FLAT, { provider: 'fake', upstream_model: 'gpt-5' }));
  };
}

describe('price variants on chat completions and the Responses API', () => {
  const suite = useGatewayWithFake(withSheet);
  let fake: FakeUpstream;
  let admin: AdminClient;
  let db: DataSource;
  beforeAll(() => ({ fake, admin, db } = suite));
  beforeEach(() => {
    fake.resetState();
    fake.reply = { content: 'Tiered.', promptTokens: PROMPT, completionTokens: COMPLETION };
  });

  const account = () => admin.createAccount({ creditsUsd: '1.00' });
  const ask = (extra: Record<string, unknown> = {}) => ({ model: TIERED.id, messages: [{ role: 'user', content: 'x'.repeat(1200) }], max_tokens: 200, ...extra });

  it.each([
    ['priority', 'priority', STANDARD * 2n, [{ service_tier: ['priority', 'fast'] }]],
    ['fast', 'priority', STANDARD * 2n, [{ service_tier: ['priority', 'fast'] }]],
    ['flex', 'flex', STANDARD / 2n, [{ service_tier: 'flex' }]],
    ['auto', 'default', STANDARD, null],
  ])('charges a JSON answer asked %s at the tier it reports (%s)', async (asked, reported, cost, variants) => {
    const { accountId, key } = await account();
    const res = await postChat(suite.gw, key, ask({ service_tier: asked }));
    expect(res.status).toBe(200);
    const body: any = await res.json();
    expect(body.service_tier).toBe(reported);
    expect(body.usage.cost).toBe(Number(cost) / 1e6);
    expect(fake.requests[0].body.service_tier).toBe(asked);
    await expectOneCharge(db, accountId, { cost, credits: CREDITS, row: {} });
    const [record] = await db.query(`SELECT price_variants FROM usage_records WHERE account_id = $1`, [accountId]);
    expect(record.price_variants).toEqual(variants);
  });

  it('charges a stream at the tier its chunks report, usage.cost included', async () => {
    const { accountId, key } = await account();
    const res = await postChat(suite.gw, key, ask({ service_tier: 'priority', stream: true, stream_options: { include_usage: true } }));
    const chunks = parseSseData(await res.text()).filter((d) => d !== '[DONE]').map((d) => JSON.parse(d));
    expect(chunks.every((c) => c.service_tier === 'priority')).toBe(true);
    expect(chunks.at(-1).usage.cost).toBe(Number(STANDARD * 2n) / 1e6);
    await expectOneCharge(db, accountId, { cost: STANDARD * 2n, credits: CREDITS, row: { streamed: true } });
  });

  it('bills a downgraded request as it ran: asked priority, answered default', async () => {
    fake.downgradePriority = true;
    const { accountId, key } = await account();
    const completion = await sdk(suite.gw, key).chat.completions.create({ model: TIERED.id, messages: [{ role: 'user', content: 'x'.repeat(1200) }], service_tier: 'priority' });
    expect(completion.service_tier).toBe('default');
    await expectOneCharge(db, accountId, { cost: STANDARD, credits: CREDITS, row: {} });
  });

  it('reprices the whole request past prompt_tokens_over, cached input counted, with the tier on top', async () => {
    fake.reply = { content: 'Long.', promptTokens: 2400, completionTokens: COMPLETION, usageDetails: { prompt: { cached_tokens: 1600 } } };
    const { accountId, key } = await account();
    // The prompt bound passes the threshold (more than 2,000 bytes): the hold is at the long-context prices.
    const long = ask({ service_tier: 'priority', messages: [{ role: 'user', content: 'x'.repeat(2100) }] });
    const res = await postChat(suite.gw, key, long);
    expect(res.status).toBe(200);
    // (800 × 2.5 + 1,600 × 0.25 + 100 × 15) × 2 = 7,800 µUSD
    await expectOneCharge(db, accountId, { cost: 7800n, credits: CREDITS, row: { prompt_tokens: 2400, cached_tokens: 1600 } });
    const [record] = await db.query(`SELECT price_variants FROM usage_records WHERE account_id = $1`, [accountId]);
    expect(record.price_variants).toEqual([{ prompt_tokens_over: LONG_CONTEXT_OVER }, { service_tier: ['priority', 'fast'] }]);
  });

  it('charges the Responses API at the tier the upstream reports', async () => {
    const { accountId, key } = await account();
    const res = await postJson(suite.gw, key, '/v1/responses', { model: TIERED.id, input: 'x'.repeat(1200), service_tier: 'priority' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).usage.cost).toBe(Number(STANDARD * 2n) / 1e6);
    expect(fake.requests[0].body.service_tier).toBe('priority');
    await expectOneCharge(db, accountId, { cost: STANDARD * 2n, credits: CREDITS, row: {} });
  });

  it('charges a streamed Responses answer at the tier the upstream reports', async () => {
    const { accountId, key } = await account();
    const events = await sdk(suite.gw, key).responses.create({ model: TIERED.id, input: 'x'.repeat(1200), service_tier: 'flex', stream: true });
    let completed: any;
    for await (const event of events) if (event.type === 'response.completed') completed = event.response;
    expect(completed.usage.cost).toBe(Number(STANDARD / 2n) / 1e6);
    await expectOneCharge(db, accountId, { cost: STANDARD / 2n, credits: CREDITS, row: { streamed: true } });
  });

  it.each([false, true])('reprices a Messages request translated to the chat upstream past prompt_tokens_over (streamed: %s)', async (stream) => {
    fake.reply = { content: 'Long.', promptTokens: 2400, completionTokens: COMPLETION };
    const { accountId, key } = await account();
    const body = { model: TIERED.id, max_tokens: 200, messages: [{ role: 'user' as const, content: 'x'.repeat(2100) }] };
    if (stream) await anthropic(suite.gw, key).messages.stream(body).finalMessage();
    else await anthropic(suite.gw, key).messages.create(body);
    // 2,400 × 2.5 + 100 × 15 = 7,500 µUSD
    await expectOneCharge(db, accountId, { cost: 7500n, credits: CREDITS, row: { prompt_tokens: 2400, streamed: stream } });
  });

  it('holds for the tier asked: a balance that covers the standard hold but not the priority one is refused before any upstream call', async () => {
    // The hold of `ask()`: a prompt bound of its ~1,230 bytes at the input price and 200 output tokens at the output
    // price, about 3,540 µUSD at standard prices, twice that at priority.
    const { accountId, key } = await admin.createAccount({ creditsUsd: '0.005' });
    const refused = await postChat(suite.gw, key, ask({ service_tier: 'priority' }));
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as any).error.code).toBe('insufficient_credits');
    expect(fake.requests).toHaveLength(0);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 5000n, reserved: 0n, openHolds: 0 });
    fake.reply = { content: 'Tiered.', promptTokens: 10, completionTokens: 10 };
    expect((await postChat(suite.gw, key, ask())).status).toBe(200);
  });

  it('charges an answer in a tier its entry does not price at standard prices, and counts it', async () => {
    // The operator's OpenAI project runs `auto` at priority: the answer says so, unasked.
    fake.projectTier = 'priority';
    const { accountId, key } = await account();
    const res = await postChat(suite.gw, key, ask({ model: FLAT.id }));
    expect(((await res.json()) as any).service_tier).toBe('priority');
    await expectOneCharge(db, accountId, { cost: STANDARD, credits: CREDITS, row: {} });
    const metrics = await (await fetch(`${suite.gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } })).text();
    expect(metrics).toContain(`gateway_unpriced_answers_total{model="${FLAT.id}",reason="service_tier"} 1`);
  });

  it('names the variants applied in the statement, by class at their prices, and in /v1/usage', async () => {
    const { accountId, key } = await account();
    expect((await postChat(suite.gw, key, ask({ service_tier: 'flex' }))).status).toBe(200);
    await waitForUsageRows(db, accountId, 1);
    await moneyOf(db, accountId);
    const statement: any = await (await fetch(`${suite.gw.url}/v1/usage/statement`, { headers: { authorization: `Bearer ${key}` } })).json();
    const charge = statement.movements.find((m: { kind: string }) => m.kind === 'charge');
    expect(charge.price_variants).toEqual([{ service_tier: 'flex' }]);
    // 1,000 × 1.25 × 0.5 and 100 × 10 × 0.5 µUSD: their sum is the charge.
    expect(charge.micros_by_class).toMatchObject({ input: '625.000000', output: '500.000000' });
    expect(charge.amount_micros).toBe('-1125');
    const usage: any = await (await fetch(`${suite.gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json();
    expect(usage.latest.find((r: { endpoint: string }) => r.endpoint === '/v1/chat/completions')).toMatchObject({ price_variants: [{ service_tier: 'flex' }], tool_uses: {}, cost_usd: '0.001125' });
  });
});
