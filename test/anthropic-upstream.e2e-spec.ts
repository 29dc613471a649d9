import Anthropic from '@anthropic-ai/sdk';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, moneyOf, PricedModel, sdk, waitForUsageRows } from './support/chat-support';
import { costMicrosByClass, holdMicrosOf } from './support/cost-oracle';
import { AnthropicUsage, FakeAnthropic } from './support/fake-anthropic';
import { anthropic, postMessages } from './support/messages-support';
import { TestApp } from './support/test-app';
import { deploymentsInOrder, expectChargedExactly, keyedProvider, useUpstreamGateway } from './support/upstream-gateway';

/**
 * The `anthropic` provider (issue 33, DESIGN.md section 11) against the fake Anthropic upstream, through the official
 * SDKs: Messages passed through (body, headers, blocks, events), chat and Responses translated, every cache class
 * charged at its own price, retries on 529, errors passed through, auto_cache, count_tokens.
 */
const KEY_ENV = 'ANTHROPIC_UPSTREAM_TEST_KEY';
/** Claude Sonnet's prices: cache reads 0.1×, 5-minute writes 1.25×, 1-hour writes 2× the input price. */
const PRICES = { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 6 };
const CLAUDE: PricedModel = { id: 'claude', ...PRICES, maxOutput: 8192 };
const CACHED: PricedModel = { id: 'claude-auto-cache', ...PRICES, maxOutput: 8192 };
const FAILOVER: PricedModel = { id: 'claude-failover', ...PRICES, maxOutput: 8192 };

describe('anthropic upstream', () => {
  let fake: FakeAnthropic, second: FakeAnthropic, gw: TestApp, admin: AdminClient, db: DataSource;
  useUpstreamGateway({
    fakes: async () => ({ fake: await new FakeAnthropic().start(), second: await new FakeAnthropic().start() }),
    config: (fakes, raw) => {
      raw.providers.claude = keyedProvider('anthropic', fakes.fake.url, KEY_ENV, 'sk-ant-fake-key');
      raw.providers.claude2 = keyedProvider('anthropic', fakes.second.url, KEY_ENV, 'sk-ant-fake-key');
      raw.catalog.push(chatCatalogEntry(CLAUDE, { provider: 'claude', upstream_model: 'claude-sonnet-4-6' }));
      raw.catalog.push(chatCatalogEntry(CACHED, { provider: 'claude', upstream_model: 'claude-sonnet-4-6', auto_cache: true }));
      raw.catalog.push(chatCatalogEntry(FAILOVER, { deployments: deploymentsInOrder(['claude', 'claude-sonnet-4-6'], ['claude2', 'claude-opus-4-6']) }));
    },
    ready: (suite) => ({ fakes: { fake, second }, gw, admin, db } = suite),
  });

  /** The usage the fake answered with, as a ClassTokens of the cost oracle. */
  function classTokens(usage: AnthropicUsage) {
    const cacheWrite = usage.cache_creation_input_tokens;
    return {
      prompt: usage.input_tokens + usage.cache_read_input_tokens + cacheWrite,
      completion: usage.output_tokens,
      cached: usage.cache_read_input_tokens,
      cacheWrite,
      cacheWrite1h: usage.cache_creation.ephemeral_1h_input_tokens,
    };
  }

  /** The charge is the fake's usage at the model's class prices, exactly; ledger = balance. */
  const expectCharged = (accountId: string, usage: AnthropicUsage, startMicros?: bigint) => expectChargedExactly(db, accountId, costMicrosByClass(PRICES, classTokens(usage)), startMicros);

  const cachedRequest = (ttl?: '1h'): Anthropic.MessageCreateParamsNonStreaming => ({
    model: CLAUDE.id,
    max_tokens: 1024,
    system: [{ type: 'text', text: 'You are a careful assistant. '.repeat(40), cache_control: { type: 'ephemeral', ...(ttl && { ttl }) } }],
    messages: [{ role: 'user', content: 'Say hello.' }],
  });

  describe('Messages in: passed through', () => {
    it('sends the body as the client wrote it (model aside) with its anthropic-beta, and answers every block, thinking signature included', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: 'The answer.', thinking: { thinking: 'Let me think.', signature: 'sig-abc123' } };
      const body = {
        model: CLAUDE.id,
        max_tokens: 2048,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        output_config: { effort: 'high' },
        context_management: { edits: [] },
        system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: [{ type: 'thinking', thinking: 'Earlier.', signature: 'sig-old' }, { type: 'text', text: 'Hello' }] },
          { role: 'user', content: [{ type: 'text', text: 'Go on', cache_control: { type: 'ephemeral' } }] },
        ],
      };
      // An older version than the gateway's own 2023-06-01: the client's is the one sent.
      const client = anthropic(gw, key, { headers: { 'anthropic-beta': 'context-management-2025-06-27', 'anthropic-version': '2023-01-01' } });
      const message = (await client.messages.create(body as never)) as unknown as Record<string, any>;
      const sent = fake.requests[0];
      expect(sent.path).toBe('/v1/messages');
      expect(sent.body).toEqual({ ...body, model: 'claude-sonnet-4-6' });
      expect(sent.headers['anthropic-beta']).toBe('context-management-2025-06-27');
      expect(sent.headers['x-api-key']).toBe('sk-ant-fake-key');
      expect(sent.headers['anthropic-version']).toBe('2023-01-01');
      expect(message.model).toBe(CLAUDE.id);
      expect(message.content).toEqual(sent.answered!.content);
      expect(message.content[0]).toEqual({ type: 'thinking', thinking: 'Let me think.', signature: 'sig-abc123' });
      expect(message.usage).toMatchObject({ cache_creation: sent.answered!.usage.cache_creation });
      const charge = await expectCharged(accountId, sent.answered!.usage);
      expect(message.usage.cost).toBe(Number(charge) / 1e6);
    });

    it("sends a field Anthropic does not know as the client wrote it, and Anthropic's 400 reaches the client, nothing charged", async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      const body = { model: CLAUDE.id, max_tokens: 100, some_future_field: { kept: true }, messages: [{ role: 'user', content: 'Hi' }] };
      const err = (await anthropic(gw, key)
        .messages.create(body as never)
        .catch((e) => e)) as InstanceType<typeof Anthropic.APIError>;
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0].body).toEqual({ ...body, model: 'claude-sonnet-4-6' });
      expect(fake.requests[0].answered).toBeUndefined();
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      expect(err.message).toContain('some_future_field: Extra inputs are not permitted');
      expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, reserved: 0n, charges: [] });
      const [row] = await waitForUsageRows(db, accountId, 1);
      expect(row).toMatchObject({ status: 400, error_code: 'upstream_rejected', cost_micros: '0' });
    });

    it('relays the stream event by event (model relabelled), and charges what the JSON answer costs', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: 'Streamed words here.', thinking: { thinking: 'Hmm, let me see.', signature: 'sig-stream' }, toolUses: [{ id: 'toolu_1', name: 'lookup', input: { q: 'x' } }] };
      const tools = [{ name: 'lookup', description: 'Look up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }];
      const res = await postMessages(gw, key, { model: CLAUDE.id, max_tokens: 2048, stream: true, tools, messages: [{ role: 'user', content: 'Find x' }] });
      expect(res.status).toBe(200);
      const text = await res.text();
      const names = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
      expect(names[0]).toBe('message_start');
      expect(names).toContain('ping');
      expect(names.at(-1)).toBe('message_stop');
      expect(text).toContain('"signature_delta"');
      expect(text).toContain('"input_json_delta"');
      expect(text).toMatch(/"model":"claude"/);
      expect(text).not.toContain('claude-sonnet-4-6');
      const streamed = fake.requests[0].answered!.usage;
      const streamCost = await expectCharged(accountId, streamed);
      const delta = JSON.parse(/event: message_delta\ndata: (.*)/.exec(text)![1]);
      expect(delta.usage).toMatchObject({ output_tokens: streamed.output_tokens, cost: Number(streamCost) / 1e6 });

      // The same request answered as JSON costs the same.
      const other = await admin.createAccount({ creditsUsd: '10' });
      const json = await postMessages(gw, other.key, { model: CLAUDE.id, max_tokens: 2048, tools, messages: [{ role: 'user', content: 'Find x' }] });
      expect(json.status).toBe(200);
      expect(await expectCharged(other.accountId, fake.requests[1].answered!.usage)).toBe(streamCost);
    });

    it('charges cache reads, 5-minute and 1-hour writes each at its own price, exactly, JSON and streamed', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      const client = anthropic(gw, key);
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
      await client.messages.create(cachedRequest('1h'));
      const write1h = await charged(0);
      expect(write1h.cache_creation.ephemeral_1h_input_tokens).toBeGreaterThan(0);
      const events = await client.messages.create({ ...cachedRequest('1h'), stream: true });
      for await (const _ of events) void _;
      const read = await charged(1);
      expect(read.cache_read_input_tokens).toBeGreaterThan(0);
      fake.cache.clear();
      await client.messages.create(cachedRequest());
      const write5m = await charged(2);
      expect(write5m.cache_creation.ephemeral_5m_input_tokens).toBeGreaterThan(0);
      const rows = await waitForUsageRows(db, accountId, 3);
      expect(rows.map((r) => [r.cached_tokens, r.cache_write_tokens, r.cache_write_1h_tokens])).toEqual([
        [0, write1h.cache_creation_input_tokens, write1h.cache_creation.ephemeral_1h_input_tokens],
        [read.cache_read_input_tokens, 0, 0],
        [0, write5m.cache_creation_input_tokens, 0],
      ]);
    });

    it('serves a 529 on the first deployment from the second, charged once', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.failNext('status529');
      const message = await anthropic(gw, key).messages.create({ model: FAILOVER.id, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] });
      expect(message.content[0]).toMatchObject({ type: 'text', text: FakeAnthropic.defaultReply().text });
      expect(fake.requests).toHaveLength(1);
      expect(second.requests).toHaveLength(1);
      expect(second.requests[0].body.model).toBe('claude-opus-4-6');
      await expectCharged(accountId, second.requests[0].answered!.usage);
    });

    it('passes a 400 through with Anthropic\'s message, charging nothing and trying no other deployment', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.failureMessage = 'messages.0.content: the thinking block is malformed';
      fake.failNext('status400');
      const err = (await anthropic(gw, key)
        .messages.create({ model: FAILOVER.id, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] })
        .catch((e) => e)) as InstanceType<typeof Anthropic.APIError>;
      expect(err.status).toBe(400);
      expect(err.message).toContain('the thinking block is malformed');
      expect(second.requests).toHaveLength(0);
      const money = await moneyOf(db, accountId);
      expect(money).toMatchObject({ balance: 10_000_000n, reserved: 0n, charges: [] });
      const [row] = await waitForUsageRows(db, accountId, 1);
      expect(row).toMatchObject({ status: 400, error_code: 'upstream_rejected', cost_micros: '0' });
    });

    it('ends a stream cut after its first bytes with an error event, charging nothing', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: 'one two three four five six seven eight nine ten' };
      fake.faultAfterEvents = 4;
      fake.failNext('cutStream');
      const res = await postMessages(gw, key, { model: CLAUDE.id, max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Count' }] });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('event: message_start');
      expect(text).toMatch(/event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
      expect(text).not.toContain('message_stop');
      expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, reserved: 0n, charges: [] });
    });

    it('charges a stream the client left for its input by class (message_start) and what was produced', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      const client = anthropic(gw, key);
      await client.messages.create(cachedRequest());
      fake.reply = { text: 'word '.repeat(200).trim() };
      fake.chunkDelayMs = 50;
      const controller = new AbortController();
      const res = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ ...cachedRequest(), stream: true }),
        signal: controller.signal,
      });
      const reader = res.body!.getReader();
      let seen = '';
      while (!seen.includes('text_delta')) {
        const { done, value } = await reader.read();
        if (done) throw new Error(`the stream ended before its first text: ${seen}`);
        seen += new TextDecoder().decode(value);
      }
      controller.abort();
      await fake.waitFor(() => fake.aborted().length === 1);
      const started = fake.requests[1].body;
      expect(started.stream).toBe(true);
      const rows = await waitForUsageRows(db, accountId, 2);
      const read = fake.usageFor(fake.requests[1].body);
      expect(rows[1]).toMatchObject({ streamed: true, cached_tokens: read.cache_read_input_tokens, prompt_tokens: read.input_tokens + read.cache_read_input_tokens });
      expect(rows[1].completion_tokens).toBeGreaterThan(0);
      expect(rows[1].completion_tokens).toBeLessThan(200);
      const cost = costMicrosByClass(PRICES, { prompt: rows[1].prompt_tokens, completion: rows[1].completion_tokens, cached: rows[1].cached_tokens });
      const money = await moneyOf(db, accountId);
      expect(money.charges.at(-1)!.amount).toBe(cost);
      expect(money.ledgerSum).toBe(money.balance);
    });

    it('forwards count_tokens to Anthropic, uncharged', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      const body = cachedRequest();
      const { max_tokens: _limit, ...counted } = body;
      const answer = await anthropic(gw, key).messages.countTokens(counted);
      expect(answer.input_tokens).toBe(FakeAnthropic.countInputTokens({ ...counted, model: 'claude-sonnet-4-6' }));
      expect(fake.requests[0].path).toBe('/v1/messages/count_tokens');
      expect(fake.requests[0].body.model).toBe('claude-sonnet-4-6');
      expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, charges: [] });
    });

    it('counts tokens through the router: a 529 on the first deployment is counted by the second, whose model it names', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.failNext('status529');
      const counted = { model: FAILOVER.id, messages: [{ role: 'user' as const, content: 'Count me.' }] };
      const answer = await anthropic(gw, key).messages.countTokens(counted);
      expect(answer.input_tokens).toBe(FakeAnthropic.countInputTokens({ ...counted, model: 'claude-opus-4-6' }));
      expect(fake.requests.map((r) => r.path)).toEqual(['/v1/messages/count_tokens']);
      expect(second.requests.map((r) => [r.path, r.body.model])).toEqual([['/v1/messages/count_tokens', 'claude-opus-4-6']]);
      const [row] = await waitForUsageRows(db, accountId, 1);
      const [record] = await db.query(`SELECT deployment, attempts, cost_micros FROM usage_records WHERE request_id = $1`, [row.request_id]);
      expect(record).toEqual({ deployment: 'claude2/claude-opus-4-6', attempts: 2, cost_micros: '0' });
    });

    it('auto_cache puts breakpoints on the last tool, system block and message block of a request that has none', async () => {
      const { key } = await admin.createAccount({ creditsUsd: '10' });
      const tools = [
        { name: 'a', input_schema: { type: 'object' as const } },
        { name: 'b', input_schema: { type: 'object' as const } },
      ];
      await anthropic(gw, key).messages.create({ model: CACHED.id, max_tokens: 100, system: 'Be brief.', tools, messages: [{ role: 'user', content: 'Hi' }] });
      const sent = fake.requests[0].body;
      expect(sent.tools[1].cache_control).toEqual({ type: 'ephemeral' });
      expect(sent.tools[0].cache_control).toBeUndefined();
      expect(sent.system).toEqual([{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }]);
      expect(sent.messages[0].content).toEqual([{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }]);
      expect(fake.requests[0].answered!.usage.cache_creation_input_tokens).toBeGreaterThan(0);

      // A request with breakpoints of its own is sent as it is.
      await anthropic(gw, key).messages.create({ ...cachedRequest(), model: CACHED.id });
      expect(fake.requests[1].body.messages[0].content).toBe('Say hello.');
    });

    it('never spends past the credits under 20 concurrent requests: the holds that fit reach Anthropic, the rest get 402 before any call', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '0.05' });
      fake.reply = { text: 'word '.repeat(50).trim() };
      const client = anthropic(gw, key);
      const messages = [{ role: 'user' as const, content: 'Talk' }];
      // Each request holds 1,000 output tokens at $15/M (15,000 µUSD) plus its short prompt's bound at $6/M (the
      // highest input-class price, the 1-hour cache writes): 3 such holds fit in 50,000 µUSD, a 4th does not.
      const fit = 50_000n / holdMicrosOf(PRICES, messages, 1000);
      expect(fit).toBe(3n);
      // The granted requests stay open at the fake until every request has been decided, so no settlement can give
      // room back meanwhile: exactly `fit` reach Anthropic, the others are refused without a call.
      let refused = 0;
      const release = fake.gate.hold();
      const statuses = Array.from({ length: 20 }, () =>
        client.messages.create({ model: CLAUDE.id, max_tokens: 1000, messages }, { maxRetries: 0 }).then(
          () => 200,
          (err: InstanceType<typeof Anthropic.APIError>) => (refused++, err.status ?? 0),
        ),
      );
      try {
        await fake.waitFor(() => fake.requests.length + refused === 20, 20_000);
      } finally {
        release();
      }
      const answered = await Promise.all(statuses);
      expect(answered.filter((s) => s === 200)).toHaveLength(Number(fit));
      expect(answered.filter((s) => s === 402)).toHaveLength(20 - Number(fit));
      expect(fake.requests).toHaveLength(Number(fit));
      // Each served request charged exactly its usage at the class prices; the balance falls by their sum, to the µUSD.
      const expected = fake.requests.map((r) => costMicrosByClass(PRICES, classTokens(r.answered!.usage)));
      const money = await moneyOf(db, accountId);
      expect(money.charges.map((c) => c.amount).sort()).toEqual([...expected].sort());
      const spent = expected.reduce((sum, micros) => sum + micros, 0n);
      expect(money.balance).toBe(50_000n - spent);
      expect(money.ledgerSum).toBe(money.balance);
      expect(money.reserved).toBe(0n);
      expect(money.openHolds).toBe(0);
    });
  });

  describe('chat and Responses in: translated', () => {
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

    it('translates a chat request with system, tools and tool results, and answers tool calls and reasoning', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: 'Checking.', thinking: { thinking: 'Need weather.', signature: 'sig' }, toolUses: [{ id: 'toolu_9', name: 'get_weather', input: { city: 'Paris' } }] };
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
          { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }] },
          { role: 'tool', tool_call_id: 'toolu_1', content: 'Sunny' },
          { role: 'user', content: 'And Paris?' },
        ],
      });
      // A chat client names no version: the gateway sends the one it speaks, Anthropic's current 2023-06-01.
      expect(fake.requests[0].headers['anthropic-version']).toBe('2023-06-01');
      const sent = fake.requests[0].body;
      expect(sent).toMatchObject({
        model: 'claude-sonnet-4-6',
        max_tokens: 4000,
        system: [{ type: 'text', text: 'Be helpful.' }],
        tools: [{ name: 'get_weather', description: 'Weather', input_schema: tools[0].function.parameters }],
        tool_choice: { type: 'any' },
        stop_sequences: ['END'],
        thinking: { type: 'enabled', budget_tokens: 2048 },
      });
      expect(sent.messages).toEqual([
        { role: 'user', content: [{ type: 'text', text: 'Weather in Rome?' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Rome' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny' }, { type: 'text', text: 'And Paris?' }] },
      ]);
      const choice = answer.choices[0];
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.content).toBe('Checking.');
      expect((choice.message as any).reasoning_content).toBe('Need weather.');
      expect(choice.message.tool_calls).toEqual([{ id: 'toolu_9', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }]);
      const usage = fake.requests[0].answered!.usage;
      expect(answer.usage).toMatchObject({ prompt_tokens: usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens, completion_tokens: usage.output_tokens });
      expect(answer.model).toBe(CLAUDE.id);
      await expectCharged(accountId, usage);
    });

    it('streams a translated chat answer: content, tool-argument deltas and the usage chunk, charged as the JSON answer', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: 'Let me check the weather.', toolUses: [{ id: 'toolu_5', name: 'get_weather', input: { city: 'Oslo' } }] };
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
      expect(content).toBe('Let me check the weather.');
      expect(toolName).toBe('get_weather');
      expect(JSON.parse(args)).toEqual({ city: 'Oslo' });
      expect(finish).toBe('tool_calls');
      const answered = fake.requests[0].answered!.usage;
      expect(usage).toMatchObject({ completion_tokens: answered.output_tokens, prompt_tokens_details: { cached_tokens: 0 } });
      expect(fake.requests[0].body.max_tokens).toBe(CLAUDE.maxOutput);
      await expectCharged(accountId, answered);
    });

    it('reports cache reads and writes to chat clients as cached_tokens and cache_write_tokens', async () => {
      const { key } = await admin.createAccount({ creditsUsd: '10' });
      const client = sdk(gw, key);
      const ask = () => client.chat.completions.create({ model: CACHED.id, messages: [{ role: 'system', content: 'Long rules. '.repeat(30) }, { role: 'user', content: 'Hi' }] });
      const first = await ask();
      const written = fake.requests[0].answered!.usage.cache_creation_input_tokens;
      expect(written).toBeGreaterThan(0);
      expect((first.usage as any).prompt_tokens_details).toMatchObject({ cached_tokens: 0, cache_write_tokens: written });
      const second = await ask();
      expect(second.usage!.prompt_tokens_details!.cached_tokens).toBe(fake.requests[1].answered!.usage.cache_read_input_tokens);
      expect(second.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThan(0);
    });

    it('serves the Responses API, JSON and streamed, with a function call', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: '', toolUses: [{ id: 'toolu_r', name: 'get_weather', input: { city: 'Lima' } }] };
      const client = sdk(gw, key);
      const rtools = [{ type: 'function' as const, name: 'get_weather', parameters: tools[0].function.parameters, strict: false }];
      const response = await client.responses.create({ model: CLAUDE.id, instructions: 'Be brief.', input: 'Lima?', tools: rtools });
      expect(response.output.find((item) => item.type === 'function_call')).toMatchObject({ name: 'get_weather', arguments: '{"city":"Lima"}', call_id: 'toolu_r' });
      expect(fake.requests[0].body.system).toEqual([{ type: 'text', text: 'Be brief.' }]);
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
      expect(completed.usage.output_tokens).toBe(fake.requests[1].answered!.usage.output_tokens);
    });

    it('passes an upstream 400 through as 400 upstream_rejected, charging nothing', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.failureMessage = 'max_tokens: 999999 > 64000, which is the maximum allowed';
      fake.failNext('status400');
      const err = await sdk(gw, key)
        .chat.completions.create({ model: CLAUDE.id, messages: [{ role: 'user', content: 'Hi' }] })
        .catch((e) => e);
      expect(err.status).toBe(400);
      expect(err.error).toMatchObject({ code: 'upstream_rejected', message: expect.stringContaining('which is the maximum allowed') });
      expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, charges: [] });
    });
  });
});
