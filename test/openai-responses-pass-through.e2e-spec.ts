import OpenAI from 'openai';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, moneyOf, postJson, PricedModel, sdk, waitForUsageRows } from './support/chat-support';
import { costMicrosByClass } from './support/cost-oracle';
import { FAKE_OPENAI_KEY, FAKE_OPENAI_KEY_ENV, FakeUpstream, startFakeUpstream } from './support/fake-upstream';
import { parseNamedEvents, postResponses } from './support/responses-support';
import { TestApp } from './support/test-app';
import { deploymentsInOrder, expectChargedExactly, keyedProvider, useUpstreamGateway } from './support/upstream-gateway';

/**
 * Responses in, `openai` up (issue 46, DESIGN.md section 12): the client's body reaches the fake OpenAI as sent but
 * for `model` and `store: false`, its answer and events come back as OpenAI sent them but for `model` and
 * `usage.cost`, through the official `openai` SDK; cached and reasoning tokens charged by class to the µUSD, on JSON,
 * streams, aborts and retries.
 */
const PRICES = { input: 1.25, cachedInput: 0.125, output: 10 };
const SOL: PricedModel = { id: 'gpt-sol', ...PRICES, maxOutput: 8192 };
const SEARCHING: PricedModel = { id: 'gpt-sol-search', ...PRICES, maxOutput: 8192 };
const FAILOVER: PricedModel = { id: 'gpt-sol-failover', ...PRICES, maxOutput: 8192 };
const UPSTREAM = 'gpt-6.2-sol';
const EXEC_TOOL = { type: 'custom', name: 'exec', description: 'Runs a shell command.' };

describe('Responses passed through to an `openai` upstream', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  useUpstreamGateway({
    fakes: async () => ({ fake: await startFakeUpstream() }),
    config: (fakes, raw) => {
      raw.providers.openai = keyedProvider('openai', fakes.fake.url, FAKE_OPENAI_KEY_ENV, FAKE_OPENAI_KEY);
      raw.providers.openai2 = keyedProvider('openai', fakes.fake.url, FAKE_OPENAI_KEY_ENV, FAKE_OPENAI_KEY);
      raw.catalog.push(chatCatalogEntry(SOL, { provider: 'openai', upstream_model: UPSTREAM, upstream_api: 'responses' }));
      raw.catalog.push(chatCatalogEntry(SEARCHING, { provider: 'openai', upstream_model: 'gpt-5', tool_fees: { web_search: 0.01 } }));
      raw.catalog.push(chatCatalogEntry(FAILOVER, { deployments: deploymentsInOrder(['openai', UPSTREAM], ['openai2', 'gpt-6.2-sol-2026-01-01']) }));
    },
    ready: (suite) => ({ fakes: { fake }, gw, admin, db } = suite),
  });
  beforeEach(() => {
    fake.reply = { content: 'Thé answer, 狐.', promptTokens: 1200, completionTokens: 90, usageDetails: { prompt: { cached_tokens: 1024 }, completion: { reasoning_tokens: 64 } } };
  });

  /** The fake's usage at the entry's prices by class: cached input at its price, reasoning as output. */
  const costOf = (reply = fake.reply) => costMicrosByClass(PRICES, { prompt: reply.promptTokens, completion: reply.completionTokens, cached: Number(reply.usageDetails?.prompt?.cached_tokens ?? 0) });

  it('sends the body as written (model, store aside), reasoning back byte for byte; answers OpenAI\'s Response relabelled, with usage.cost', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    const client = sdk(gw, key);
    fake.reply.reasoning = { summary: ['Plan.'] };
    fake.reply.customToolCalls = [{ id: 'call_exec_1', name: 'exec', input: 'ls -la /tmp' }];
    const first = { model: SOL.id, input: [{ role: 'user', content: 'List /tmp.' }], tools: [EXEC_TOOL], include: ['reasoning.encrypted_content'], reasoning: { effort: 'high', summary: 'auto' }, store: false } as const;
    const answer: any = await client.responses.create(first as any);
    expect(answer.model).toBe(SOL.id);
    const [reasoning, call] = answer.output;
    expect(reasoning).toMatchObject({ type: 'reasoning', encrypted_content: expect.stringMatching(/^gAAAAA/) });
    expect(call).toMatchObject({ type: 'custom_tool_call', call_id: 'call_exec_1', input: 'ls -la /tmp' });
    expect(fake.requests[0].body).toEqual({ ...first, model: UPSTREAM });

    fake.reply.customToolCalls = undefined;
    const second = {
      model: SOL.id,
      input: [...first.input, ...answer.output, { type: 'custom_tool_call_output', call_id: 'call_exec_1', output: 'a b' }],
      tools: [EXEC_TOOL, { type: 'namespace', name: 'functions', description: 'Tools.', tools: [{ type: 'function', name: 'wait', parameters: { type: 'object', properties: {} } }] }],
      include: ['reasoning.encrypted_content'],
      text: { verbosity: 'low' },
      prompt_cache_key: 'session-1',
      parallel_tool_calls: false,
      store: true,
    };
    const { data, response } = await client.responses.create(second as any).withResponse();
    const sent = fake.requests[1];
    expect(sent.path).toBe('/v1/responses');
    expect(sent.headers.authorization).toBe(`Bearer ${FAKE_OPENAI_KEY}`);
    expect(sent.body).toEqual({ ...second, model: UPSTREAM, store: false });
    expect(sent.body.input[1].encrypted_content).toBe(reasoning.encrypted_content);
    expect(sent.responses).toMatchObject({ store: false, reasoningIntact: true });
    expect(response.headers.get('x-gateway-ignored-params')).toBe('store');
    const native = data as any;
    expect(native).toMatchObject({ object: 'response', model: SOL.id, output_text: 'Thé answer, 狐.' });
    expect(native.usage).toEqual({ ...fakeUsage(), cost: expect.any(Number) });
    const each = costOf();
    expect(native.usage.cost).toBe(Number(each) / 1e6);
    expect(response.headers.get('x-gateway-cost-usd')).toBe((Number(each) / 1e6).toFixed(6));
    const money = await moneyOf(db, accountId);
    expect(money.charges.map((c) => c.amount)).toEqual([each, each]);
    expect(money).toMatchObject({ balance: 10_000_000n - 2n * each, ledgerSum: 10_000_000n - 2n * each, reserved: 0n });
    const rows = await waitForUsageRows(db, accountId, 2);
    expect(rows[1]).toMatchObject({ model: SOL.id, prompt_tokens: 1200, cached_tokens: 1024, completion_tokens: 90, reasoning_tokens: 64, cost_micros: String(each) });
  });

  it('relays the stream event by event (model relabelled, usage.cost on response.completed), charged as the JSON answer', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.reply.reasoning = { summary: ['Thinking.'] };
    const res = await postResponses(gw, key, { model: SOL.id, input: 'Say hi.', stream: true, include: ['reasoning.encrypted_content'], reasoning: { summary: 'auto' }, stream_options: { include_obfuscation: false } });
    expect(res.status).toBe(200);
    const events = parseNamedEvents(await res.text());
    expect(fake.requests[0].body).toEqual({ model: UPSTREAM, input: 'Say hi.', stream: true, include: ['reasoning.encrypted_content'], reasoning: { summary: 'auto' }, stream_options: { include_obfuscation: false }, store: false });
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.every((e) => e.event === e.data.type)).toBe(true);
    expect(events[0].data.response.model).toBe(SOL.id);
    const completed = events.at(-1)!.data;
    expect(completed.type).toBe('response.completed');
    expect(completed.response.model).toBe(SOL.id);
    expect(completed.response.output[0]).toMatchObject({ type: 'reasoning', encrypted_content: expect.stringMatching(/^gAAAAA/) });
    const charge = await expectChargedExactly(db, accountId, costOf());
    expect(completed.response.usage).toEqual({ ...fakeUsage(), cost: Number(charge) / 1e6 });
    // The SDK rebuilds the Response from the relayed events.
    const stream = sdk(gw, key).responses.stream({ model: SOL.id, input: 'Say hi.' });
    for await (const _event of stream) void _event;
    expect((await stream.finalResponse()).output_text).toBe('Thé answer, 狐.');
  });

  it("sends a field the gateway does not know: OpenAI's refusal passes through uncharged, and once OpenAI takes it, it is served", async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    const body = { model: SOL.id, input: 'x', some_future_field: { kept: true } };
    const err = (await sdk(gw, key).responses.create(body as any).catch((e) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err.status).toBe(400);
    expect(err.message).toContain("Unknown parameter: 'some_future_field'.");
    expect(fake.requests[0].body).toEqual({ ...body, model: UPSTREAM, store: false });
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, reserved: 0n, charges: [] });
    fake.responses.undocumentedFields.add('some_future_field');
    const served = await sdk(gw, key).responses.create(body as any);
    expect(served.model).toBe(SOL.id);
    expect(fake.requests[1].body.some_future_field).toEqual({ kept: true });
    await expectChargedExactly(db, accountId, costOf());
  });

  it.each([
    ['previous_response_id', { previous_response_id: 'resp_1' }],
    ['conversation', { conversation: 'conv_1' }],
    ['background', { background: true }],
    ['prompt', { prompt: { id: 'pmpt_1' } }],
  ])('still refuses %s (state at the upstream would be shared by every key), before any upstream call', async (param, extra) => {
    const { key } = await admin.createAccount({ creditsUsd: '10' });
    const res = await postResponses(gw, key, { model: SOL.id, input: 'x', ...extra });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'unsupported_parameter', param });
    expect(fake.requests).toHaveLength(0);
  });

  it('serves web search where the entry prices it, withdraws it (named) where it does not; a forced withdrawn tool is refused', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '10' });
    const tools = [{ type: 'web_search' }, { type: 'function', name: 'f', parameters: { type: 'object', properties: {} }, strict: false }];
    const priced = await postResponses(gw, key, { model: SEARCHING.id, input: 'x', tools });
    expect(priced.status).toBe(200);
    expect(priced.headers.get('x-gateway-ignored-params')).toBeNull();
    expect(fake.requests[0].body.tools).toEqual(tools);
    const unpriced = await postResponses(gw, key, { model: SOL.id, input: 'x', tools });
    expect(unpriced.status).toBe(200);
    expect(unpriced.headers.get('x-gateway-ignored-params')).toBe('tools:web_search');
    expect(fake.requests[1].body.tools).toEqual([tools[1]]);
    const forced = await postResponses(gw, key, { model: SOL.id, input: 'x', tools, tool_choice: { type: 'web_search' } });
    expect(forced.status).toBe(400);
    expect(((await forced.json()) as any).error).toMatchObject({ code: 'unsupported_parameter', param: 'tool_choice' });
    expect(fake.requests).toHaveLength(2);
  });

  it('caps max_output_tokens upstream when the credits afford less than the output limit', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '0.02' });
    const res = await postResponses(gw, key, { model: SOL.id, input: 'x' });
    expect(res.status).toBe(200);
    const cap = fake.requests[0].body.max_output_tokens;
    expect(cap).toBeGreaterThanOrEqual(fake.reply.completionTokens);
    expect(cap).toBeLessThan(SOL.maxOutput);
  });

  it("declines (402, insufficient credits) what the credits cut below 16 output tokens, OpenAI's least, on Responses and on chat", async () => {
    // $0.0001: 6 prompt tokens held for `"x"` (3 bytes and 3) at $1.25 per million leave room for 9 output tokens at $10.
    const { accountId, key } = await admin.createAccount({ creditsUsd: '0.0001' });
    const declined = async (res: Response) => ({ status: res.status, error: ((await res.json()) as any).error });
    const responses = await declined(await postResponses(gw, key, { model: SOL.id, input: 'x' }));
    expect(responses).toMatchObject({ status: 402, error: { code: 'insufficient_credits', type: 'insufficient_quota' } });
    expect(responses.error.message).toMatch(/held for at least 16 output tokens \(no max_output_tokens was set.*covers at most 9 output tokens with this prompt\. Top up credits\.$/);
    // A chat client on the Responses-only entry: 34 prompt tokens held, 5 output tokens affordable (the translation would refuse 5).
    const chat = await declined(await postJson(gw, key, '/v1/chat/completions', { model: SOL.id, messages: [{ role: 'user', content: 'x' }] }));
    expect(chat).toMatchObject({ status: 402, error: { code: 'insufficient_credits' } });
    expect(chat.error.message).toContain('held for at least 16 output tokens (no max_completion_tokens was set');
    expect(fake.requests).toHaveLength(0);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 100n, reserved: 0n, charges: [] });
    // $0.0002 affords 19: sent as the limit, the answer cut there and charged.
    const richer = await admin.createAccount({ creditsUsd: '0.0002' });
    const cut = (await (await postResponses(gw, richer.key, { model: SOL.id, input: 'x' })).json()) as any;
    expect(fake.requests[0].body.max_output_tokens).toBe(19);
    expect(cut).toMatchObject({ status: 'incomplete', usage: { output_tokens: 19 } });
  });

  it('charges the web searches OpenAI ran (tool_fees.web_search) beside the tokens, on JSON and on a stream, recorded by tool', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.responses.webSearches = [{ query: 'weather Paris' }, { query: 'weather Lyon' }];
    const each = costOf() + 2n * 10_000n;
    const asked = { model: SEARCHING.id, input: 'Weather?', tools: [{ type: 'web_search' }] };
    const json = (await (await postResponses(gw, key, asked)).json()) as any;
    expect(json.output.map((i: any) => i.type)).toEqual(['web_search_call', 'web_search_call', 'message']);
    expect(json.usage.cost).toBe(Number(each) / 1e6);
    const events = parseNamedEvents(await (await postResponses(gw, key, { ...asked, stream: true })).text());
    expect(events.filter((e) => e.data.type.startsWith('response.web_search_call.'))).toHaveLength(6);
    expect(events.at(-1)!.data.response.usage.cost).toBe(Number(each) / 1e6);
    const money = await moneyOf(db, accountId);
    expect(money.charges.map((c) => c.amount)).toEqual([each, each]);
    expect(money).toMatchObject({ balance: 10_000_000n - 2n * each, reserved: 0n });
    await waitForUsageRows(db, accountId, 2);
    const rows = await db.query(`SELECT streamed, cost_micros, tool_uses FROM usage_records WHERE account_id = $1 ORDER BY id`, [accountId]);
    const recorded = { cost_micros: String(each), tool_uses: { web_search: { uses: 2, micros: '20000' } } };
    expect(rows).toEqual([{ streamed: false, ...recorded }, { streamed: true, ...recorded }]);
    const usage: any = await (await fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json();
    expect(usage.totals.tool_uses).toEqual({ web_search: { uses: 4, cost_usd: '0.040000' } });
    expect(usage.latest.map((r: any) => r.tool_uses)).toEqual([{ web_search: { uses: 2, cost_usd: '0.020000' } }, { web_search: { uses: 2, cost_usd: '0.020000' } }]);
  });

  it('charges a stream the client left for the prompt and what was produced (the gateway counts: OpenAI reports usage at the end)', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.reply = { content: 'word '.repeat(200).trim(), promptTokens: 50, completionTokens: 200 };
    fake.chunkDelayMs = 50;
    const controller = new AbortController();
    const res = await postResponses(gw, key, { model: SOL.id, input: 'Talk.', stream: true }, { signal: controller.signal });
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('response.output_text.delta')) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the stream ended before its first text: ${seen}`);
      seen += new TextDecoder().decode(value);
    }
    controller.abort();
    await fake.waitFor(() => fake.aborted().length === 1);
    const [row] = await waitForUsageRows(db, accountId, 1);
    expect(row).toMatchObject({ streamed: true, cached_tokens: 0 });
    expect(row.prompt_tokens).toBeGreaterThan(0);
    expect(row.completion_tokens).toBeGreaterThan(0);
    expect(row.completion_tokens).toBeLessThan(200);
    await expectChargedExactly(db, accountId, costMicrosByClass(PRICES, { prompt: row.prompt_tokens, completion: row.completion_tokens }));
  });

  it('retries a 500 before the first byte on the next deployment, and charges once', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.failNext('status500');
    const answer = await sdk(gw, key).responses.create({ model: FAILOVER.id, input: 'x' });
    expect(answer.model).toBe(FAILOVER.id);
    expect(fake.requests.map((r) => r.body.model)).toEqual([UPSTREAM, 'gpt-6.2-sol-2026-01-01']);
    const charge = await expectChargedExactly(db, accountId, costOf());
    expect(answer.usage).toMatchObject({ cost: Number(charge) / 1e6 });
  });

  it('serves chat completions on an `openai` provider as openai-compatible does, for an entry of upstream_api chat', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    const completion = await sdk(gw, key).chat.completions.create({ model: SEARCHING.id, messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0].message.content).toBe('Thé answer, 狐.');
    expect(fake.requests.map((r) => [r.path, r.body.model, r.headers.authorization])).toEqual([['/v1/chat/completions', 'gpt-5', `Bearer ${FAKE_OPENAI_KEY}`]]);
    await expectChargedExactly(db, accountId, costOf());
  });

  /** OpenAI's usage block for the fake's reply, as the fake writes it. */
  function fakeUsage() {
    const { promptTokens, completionTokens, usageDetails } = fake.reply;
    return {
      input_tokens: promptTokens,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0, ...usageDetails?.prompt },
      output_tokens: completionTokens,
      output_tokens_details: { reasoning_tokens: 0, ...usageDetails?.completion },
      total_tokens: promptTokens + completionTokens,
    };
  }
});
