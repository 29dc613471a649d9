import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, moneyOf, PricedModel, postChat, readSseData, sdk, waitForUsageRows } from './support/chat-support';
import { costMicrosByClass } from './support/cost-oracle';
import { BedrockUsage, FakeBedrock } from './support/fake-bedrock';
import { fakeOpenAiProvider, FakeUpstream, startFakeUpstream } from './support/fake-upstream';
import { anthropic } from './support/messages-support';
import { TestApp } from './support/test-app';
import { deploymentsInOrder, expectChargedExactly, UPSTREAM_TIMEOUTS, useUpstreamGateway } from './support/upstream-gateway';

/**
 * The `bedrock` provider (issue 34, DESIGN.md section 11) against the fake Bedrock runtime (SigV4 checked, event-stream
 * frames), through the official SDKs: chat, Responses and Messages translated to Converse and back, cache reads and
 * writes charged at their own prices, throttling served by another deployment, errors passed through, broken
 * streams and aborts.
 */
const KEY_ID_ENV = 'BEDROCK_UPSTREAM_TEST_KEY_ID';
const SECRET_ENV = 'BEDROCK_UPSTREAM_TEST_SECRET';
const UPSTREAM = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
/** Claude Sonnet on Bedrock: cache reads 0.1×, cache writes 1.25× the input price. */
const PRICES = { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 };
const CLAUDE: PricedModel = { id: 'bedrock-claude', ...PRICES, maxOutput: 8192 };
const CACHED: PricedModel = { id: 'bedrock-claude-auto-cache', ...PRICES, maxOutput: 8192 };
const SLOW: PricedModel = { id: 'bedrock-claude-slow', ...PRICES, maxOutput: 8192 };
const FAILOVER: PricedModel = { id: 'bedrock-claude-failover', ...PRICES, maxOutput: 8192 };

describe('bedrock upstream', () => {
  let fake: FakeBedrock, openai: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;

  useUpstreamGateway({
    fakes: async () => ({ fake: await new FakeBedrock().start(), openai: await startFakeUpstream() }),
    config: (fakes, raw) => {
      process.env[KEY_ID_ENV] = fakes.fake.accessKeyId;
      process.env[SECRET_ENV] = fakes.fake.secretAccessKey;
      const aws = { type: 'bedrock', region: fakes.fake.region, base_url: fakes.fake.url, access_key_id_env: KEY_ID_ENV, secret_access_key_env: SECRET_ENV };
      raw.providers.aws = { ...aws, timeouts: UPSTREAM_TIMEOUTS };
      raw.providers.aws_slow = { ...aws, timeouts: { connect_ms: 1000, request_ms: 300 } };
      raw.providers.openai2 = fakeOpenAiProvider(fakes.openai.url);
      raw.catalog.push(chatCatalogEntry(CLAUDE, { provider: 'aws', upstream_model: UPSTREAM }));
      raw.catalog.push(chatCatalogEntry(SLOW, { provider: 'aws_slow', upstream_model: UPSTREAM }));
      raw.catalog.push(chatCatalogEntry(CACHED, { provider: 'aws', upstream_model: UPSTREAM, auto_cache: true }));
      raw.catalog.push(chatCatalogEntry(FAILOVER, { deployments: deploymentsInOrder(['aws', UPSTREAM], ['openai2', 'gpt-fallback']) }));
    },
    ready: (suite) => ({ fakes: { fake, openai }, gw, admin, db } = suite),
  });

  const classTokens = (usage: BedrockUsage) => ({
    prompt: usage.inputTokens + usage.cacheReadInputTokens + usage.cacheWriteInputTokens,
    completion: usage.outputTokens,
    cached: usage.cacheReadInputTokens,
    cacheWrite: usage.cacheWriteInputTokens,
  });

  /** The charge is the fake's usage at the model's class prices, exactly; ledger = balance. */
  const expectCharged = (accountId: string, usage: BedrockUsage, startMicros?: bigint) => expectChargedExactly(db, accountId, costMicrosByClass(PRICES, classTokens(usage)), startMicros);

  const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

  it('translates a chat request with system, tools and tool results to Converse, signed, and answers tool calls and reasoning', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.reply = { text: 'Checking.', reasoning: { text: 'Need weather.', signature: 'sig' }, toolUses: [{ toolUseId: 'tooluse_9', name: 'get_weather', input: { city: 'Paris' } }] };
    const answer = await sdk(gw, key).chat.completions.create({
      model: CLAUDE.id,
      reasoning_effort: 'low',
      max_completion_tokens: 4000,
      tools,
      tool_choice: 'required',
      stop: ['END'],
      messages: [
        { role: 'system', content: 'Be helpful.' },
        { role: 'user', content: 'Weather in Rome?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'tooluse_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }] },
        { role: 'tool', tool_call_id: 'tooluse_1', content: 'Sunny' },
        { role: 'user', content: 'And Paris?' },
      ],
    });
    const sent = fake.requests[0];
    expect(sent.path).toBe('/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse');
    expect(sent.signatureValid).toBe(true);
    expect(sent.body).toEqual({
      system: [{ text: 'Be helpful.' }],
      messages: [
        { role: 'user', content: [{ text: 'Weather in Rome?' }] },
        { role: 'assistant', content: [{ toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Rome' } } }] },
        { role: 'user', content: [{ toolResult: { toolUseId: 'tooluse_1', content: [{ text: 'Sunny' }] } }, { text: 'And Paris?' }] },
      ],
      inferenceConfig: { maxTokens: 4000, stopSequences: ['END'] },
      toolConfig: { tools: [{ toolSpec: { name: 'get_weather', description: 'Weather', inputSchema: { json: tools[0].function.parameters } } }], toolChoice: { any: {} } },
      additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 2048 } },
    });
    const choice = answer.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBe('Checking.');
    expect((choice.message as any).reasoning_content).toBe('Need weather.');
    expect(choice.message.tool_calls).toEqual([{ id: 'tooluse_9', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }]);
    const usage = sent.answered!.usage;
    expect(answer.usage).toMatchObject({ prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens });
    expect(answer.model).toBe(CLAUDE.id);
    await expectCharged(accountId, usage);
  });

  it('streams a translated chat answer through ConverseStream: content, tool-argument deltas and the usage chunk, charged as the JSON answer', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.reply = { text: 'Let me check the weather.', toolUses: [{ toolUseId: 'tooluse_5', name: 'get_weather', input: { city: 'Oslo' } }] };
    const stream = await sdk(gw, key).chat.completions.create({ model: CLAUDE.id, stream: true, stream_options: { include_usage: true }, tools, messages: [{ role: 'user', content: 'Oslo?' }] });
    let content = '';
    let args = '';
    let finish: string | null = null;
    let usage: any = null;
    let toolName = '';
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      content += choice?.delta?.content ?? '';
      for (const call of choice?.delta?.tool_calls ?? []) {
        toolName += call.function?.name ?? '';
        args += call.function?.arguments ?? '';
      }
      finish = choice?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(fake.requests[0].operation).toBe('converse-stream');
    expect(fake.requests[0].body.inferenceConfig).toEqual({ maxTokens: CLAUDE.maxOutput });
    expect(content).toBe('Let me check the weather.');
    expect(toolName).toBe('get_weather');
    expect(JSON.parse(args)).toEqual({ city: 'Oslo' });
    expect(finish).toBe('tool_calls');
    const answered = fake.requests[0].answered!.usage;
    expect(usage).toMatchObject({ prompt_tokens: answered.inputTokens, completion_tokens: answered.outputTokens });
    const streamCost = await expectCharged(accountId, answered);

    const other = await admin.createAccount({ creditsUsd: '10' });
    await sdk(gw, other.key).chat.completions.create({ model: CLAUDE.id, tools, messages: [{ role: 'user', content: 'Oslo?' }] });
    expect(await expectCharged(other.accountId, fake.requests[1].answered!.usage)).toBe(streamCost);
  });

  it('serves the Responses API, JSON and streamed, with a function call', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.reply = { text: '', toolUses: [{ toolUseId: 'tooluse_r', name: 'get_weather', input: { city: 'Lima' } }] };
    const client = sdk(gw, key);
    const rtools = [{ type: 'function' as const, name: 'get_weather', parameters: tools[0].function.parameters, strict: false }];
    const response = await client.responses.create({ model: CLAUDE.id, instructions: 'Be brief.', input: 'Lima?', tools: rtools });
    expect(response.output.find((item) => item.type === 'function_call')).toMatchObject({ name: 'get_weather', arguments: '{"city":"Lima"}', call_id: 'tooluse_r' });
    expect(fake.requests[0].body.system).toEqual([{ text: 'Be brief.' }]);
    await expectCharged(accountId, fake.requests[0].answered!.usage);

    fake.reply = { text: 'Sunny in Lima.' };
    const events = await client.responses.create({ model: CLAUDE.id, input: 'Lima?', stream: true });
    let text = '';
    let completed: any = null;
    for await (const event of events) {
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(text).toBe('Sunny in Lima.');
    expect(fake.requests[1].operation).toBe('converse-stream');
    expect(completed.usage.output_tokens).toBe(fake.requests[1].answered!.usage.outputTokens);
  });

  it('serves the Messages API through the Anthropic SDK, JSON and streamed', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.reply = { text: 'Hello from Bedrock.', toolUses: [{ toolUseId: 'tooluse_m', name: 'lookup', input: { q: 'x' } }] };
    const client = anthropic(gw, key);
    const mtools = [{ name: 'lookup', description: 'Look up', input_schema: { type: 'object' as const, properties: { q: { type: 'string' } } } }];
    const message = await client.messages.create({ model: CLAUDE.id, max_tokens: 500, system: 'Be brief.', tools: mtools, messages: [{ role: 'user', content: 'Find x' }] });
    expect(fake.requests[0].body).toMatchObject({ system: [{ text: 'Be brief.' }], inferenceConfig: { maxTokens: 500 }, toolConfig: { tools: [{ toolSpec: { name: 'lookup' } }] } });
    expect(message.content).toEqual([
      { type: 'text', text: 'Hello from Bedrock.' },
      { type: 'tool_use', id: 'tooluse_m', name: 'lookup', input: { q: 'x' } },
    ]);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.usage.output_tokens).toBe(fake.requests[0].answered!.usage.outputTokens);
    await expectCharged(accountId, fake.requests[0].answered!.usage);

    fake.reply = { text: 'Streamed from Bedrock.' };
    const stream = client.messages.stream({ model: CLAUDE.id, max_tokens: 500, messages: [{ role: 'user', content: 'Hi' }] });
    let text = '';
    for await (const event of stream) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    const final = await stream.finalMessage();
    expect(text).toBe('Streamed from Bedrock.');
    expect(final.stop_reason).toBe('end_turn');
    expect(fake.requests[1].operation).toBe('converse-stream');
  });

  it('charges cache writes and reads each at its own price, exactly; auto_cache puts the cache points', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    const client = sdk(gw, key);
    let start = 10_000_000n;
    const charged = async (index: number) => {
      const usage = fake.requests[index].answered!.usage;
      const cost = costMicrosByClass(PRICES, classTokens(usage));
      const money = await moneyOf(db, accountId);
      expect(money.charges.at(-1)!.amount).toBe(cost);
      expect(money.balance).toBe(start - cost);
      expect(money.ledgerSum).toBe(money.balance);
      start = money.balance;
      return usage;
    };
    const ask = () =>
      client.chat.completions.create({ model: CACHED.id, tools, messages: [{ role: 'system', content: 'Long rules. '.repeat(30) }, { role: 'user', content: 'Hi' }] });
    const first = await ask();
    const sent = fake.requests[0].body;
    const point = { cachePoint: { type: 'default' } };
    expect(sent.toolConfig.tools.at(-1)).toEqual(point);
    expect(sent.system).toEqual([{ text: 'Long rules. '.repeat(30) }, point]);
    expect(sent.messages).toEqual([{ role: 'user', content: [{ text: 'Hi' }, point] }]);
    const written = await charged(0);
    expect(written.cacheWriteInputTokens).toBeGreaterThan(0);
    expect(first.usage!.prompt_tokens_details).toMatchObject({ cached_tokens: 0, cache_write_tokens: written.cacheWriteInputTokens });

    const stream = await client.chat.completions.create({
      model: CACHED.id,
      stream: true,
      stream_options: { include_usage: true },
      tools,
      messages: [{ role: 'system', content: 'Long rules. '.repeat(30) }, { role: 'user', content: 'Hi' }],
    });
    for await (const _ of stream) void _;
    const read = await charged(1);
    expect(read.cacheReadInputTokens).toBeGreaterThan(0);

    // A client's own cache_control on a content part is a cache point there (and auto_cache adds none).
    const marked = [{ type: 'text', text: 'Context. '.repeat(40), cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'Question?' }];
    await client.chat.completions.create({ model: CACHED.id, messages: [{ role: 'user', content: marked as never }] });
    expect(fake.requests[2].body.messages[0].content).toEqual([{ text: 'Context. '.repeat(40) }, point, { text: 'Question?' }]);
    await charged(2);
    const rows = await waitForUsageRows(db, accountId, 3);
    expect(rows.map((r) => [r.cached_tokens, r.cache_write_tokens])).toEqual([
      [0, written.cacheWriteInputTokens],
      [read.cacheReadInputTokens, 0],
      [0, fake.requests[2].answered!.usage.cacheWriteInputTokens],
    ]);
  });

  it('serves a ThrottlingException on the Bedrock deployment from the next deployment (another type), charged once', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.failNext('throttling');
    const answer = await sdk(gw, key).chat.completions.create({ model: FAILOVER.id, messages: [{ role: 'user', content: 'Hi' }] });
    expect(answer.choices[0].message.content).toBe(FakeUpstream.defaultReply().content);
    expect(fake.requests).toHaveLength(1);
    expect(openai.requests).toHaveLength(1);
    expect(openai.requests[0].body.model).toBe('gpt-fallback');
    const reply = FakeUpstream.defaultReply();
    const expected = costMicrosByClass(PRICES, { prompt: reply.promptTokens, completion: reply.completionTokens });
    const money = await moneyOf(db, accountId);
    expect(money.charges.map((c) => c.amount)).toEqual([expected]);
    expect(money.ledgerSum).toBe(money.balance);
  });

  it('passes an upstream ValidationException through as 400 upstream_rejected, costing nothing and trying no other deployment', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.failureMessage = 'The model returned the following errors: prompt is too long: 250000 tokens > 200000 maximum';
    fake.failNext('validation');
    const err = await sdk(gw, key)
      .chat.completions.create({ model: FAILOVER.id, messages: [{ role: 'user', content: 'Hi' }] })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.error).toMatchObject({ code: 'upstream_rejected', message: expect.stringContaining('prompt is too long') });
    expect(openai.requests).toHaveLength(0);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, reserved: 0n, charges: [] });
    const [row] = await waitForUsageRows(db, accountId, 1);
    expect(row).toMatchObject({ status: 400, error_code: 'upstream_rejected', cost_micros: '0' });
  });

  it.each([
    ['cut mid-frame', 'cutStream'],
    ['failed by an exception event', 'exceptionEvent'],
  ] as const)('ends a stream %s after its first bytes with an error event, charging nothing', async (_name, mode) => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.reply = { text: 'one two three four five six seven eight nine ten' };
    fake.faultAfterEvents = 3;
    fake.failNext(mode);
    const res = await postChat(gw, key, { model: CLAUDE.id, stream: true, messages: [{ role: 'user', content: 'Count' }] });
    expect(res.status).toBe(200);
    const data = await readSseData(res);
    expect(data).not.toContain('[DONE]');
    expect(JSON.parse(data[0]).choices[0].delta).toMatchObject({ role: 'assistant' });
    expect(JSON.parse(data.at(-1)!)).toEqual({ error: expect.objectContaining({ code: 'upstream_error', type: 'api_error' }) });
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, reserved: 0n, ledgerSum: 10_000_000n, charges: [] });
    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ streamed: true, error_code: 'upstream_error', cost_micros: '0' })]);
  });

  it('gives up on a silent upstream after request_ms: 502 upstream_error, the request closed, nothing charged', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    fake.failure = 'hang';
    const res = await postChat(gw, key, { model: SLOW.id, messages: [{ role: 'user', content: 'Hi' }] });
    expect(res.status).toBe(502);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'upstream_error', message: expect.stringContaining('did not answer in time') });
    await fake.waitFor(() => fake.requests.length > 0 && fake.aborted().length === fake.requests.length);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, reserved: 0n, charges: [] });
  });

  it('closes the upstream request when the client leaves a stream', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '10' });
    fake.reply = { text: 'word '.repeat(200).trim() };
    fake.chunkDelayMs = 50;
    const controller = new AbortController();
    const res = await postChat(gw, key, { model: CLAUDE.id, stream: true, messages: [{ role: 'user', content: 'Talk' }] }, { signal: controller.signal });
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('word')) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the stream ended before its first text: ${seen}`);
      seen += new TextDecoder().decode(value);
    }
    controller.abort();
    await fake.waitFor(() => fake.aborted().length === 1);
    expect(fake.requests[0].finished).toBe(false);
  });
});
