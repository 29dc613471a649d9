import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, moneyOf, postChat, PricedModel, sdk, waitForUsageRows } from './support/chat-support';
import { costMicrosByClass } from './support/cost-oracle';
import { fakeTokenCount } from './support/fake-tokens';
import { FakeGemini, GeminiUsageMetadata } from './support/fake-gemini';
import { documentedClasses, DOCUMENTED_USAGE, FLASH_PRICES } from './support/gemini-documented-usage';
import { anthropic } from './support/messages-support';
import { TestApp } from './support/test-app';
import { deploymentsInOrder, expectChargedExactly, keyedProvider, useUpstreamGateway } from './support/upstream-gateway';

/**
 * The `gemini` provider (issue 34, DESIGN.md section 11) against the fake Gemini API, through the official SDKs:
 * chat, Responses and Messages translated into generateContent and back, tools and tool results, thoughts,
 * cached and thinking tokens each charged at their own price, 429 RESOURCE_EXHAUSTED and 503 UNAVAILABLE served by
 * another deployment, a 400 passed through, a cut stream.
 */
const KEY_ENV = 'GEMINI_UPSTREAM_TEST_KEY';
/** Gemini 2.5 Flash's prices: cached input a quarter of the input price; thoughts are output. */
const PRICES = FLASH_PRICES;
const FLASH: PricedModel = { id: 'gemini-flash', ...PRICES, maxOutput: 8192 };
const FAILOVER: PricedModel = { id: 'gemini-failover', ...PRICES, maxOutput: 8192 };

describe('gemini upstream', () => {
  let fake: FakeGemini, second: FakeGemini, gw: TestApp, admin: AdminClient, db: DataSource;

  useUpstreamGateway({
    fakes: async () => ({ fake: await new FakeGemini().start(), second: await new FakeGemini().start() }),
    config: (fakes, raw) => {
      raw.providers.gemini = keyedProvider('gemini', fakes.fake.url, KEY_ENV, 'AIzaSyFake-gemini-key');
      raw.providers.gemini2 = keyedProvider('gemini', fakes.second.url, KEY_ENV, 'AIzaSyFake-gemini-key');
      raw.catalog.push(chatCatalogEntry(FLASH, { provider: 'gemini', upstream_model: 'gemini-2.5-flash' }));
      raw.catalog.push(chatCatalogEntry(FAILOVER, { deployments: deploymentsInOrder(['gemini', 'gemini-2.5-flash'], ['gemini2', 'gemini-2.5-pro']) }));
    },
    ready: (suite) => ({ fakes: { fake, second }, gw, admin, db } = suite),
  });

  /** The charge is the fake's usage at the model's class prices, exactly; ledger = balance. */
  const expectCharged = (accountId: string, usage: GeminiUsageMetadata, startMicros?: bigint) => expectChargedExactly(db, accountId, costMicrosByClass(PRICES, documentedClasses(usage)), startMicros);

  const tools = [
    {
      type: 'function' as const,
      function: {
        name: 'get_weather',
        description: 'Weather',
        parameters: { type: 'object', properties: { city: { type: 'string' }, when: { anyOf: [{ type: 'string' }, { type: 'null' }] } }, required: ['city'], additionalProperties: false },
      },
    },
  ];

  describe('usage as Google documents it (test/support/gemini-documented-usage.ts)', () => {
    it.each(DOCUMENTED_USAGE.flatMap((example) => [false, true].map((stream) => ({ ...example, stream }))))(
      'charges $name exactly by its hand-written figures (streamed: $stream)',
      async ({ usageMetadata, chat, micros, stream }) => {
        expect(documentedClasses(usageMetadata)).toEqual({ prompt: chat.prompt, cached: chat.cached, completion: chat.completion });
        const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
        fake.reply = { text: 'An answer.', usageMetadata };
        const body = { model: FLASH.id, messages: [{ role: 'user' as const, content: 'A question?' }] };
        let usage: any;
        if (!stream) usage = (await sdk(gw, key).chat.completions.create(body)).usage;
        else for await (const chunk of await sdk(gw, key).chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } })) usage = chunk.usage ?? usage;
        expect(usage).toMatchObject({
          prompt_tokens: chat.prompt,
          completion_tokens: chat.completion,
          prompt_tokens_details: { cached_tokens: chat.cached },
          completion_tokens_details: { reasoning_tokens: chat.reasoning },
        });
        const money = await moneyOf(db, accountId);
        expect(money.charges.map((c) => c.amount)).toEqual([micros]);
        expect(money.balance).toBe(10_000_000n - micros);
        const [row] = await waitForUsageRows(db, accountId, 1);
        expect(row).toMatchObject({ prompt_tokens: chat.prompt, completion_tokens: chat.completion, cached_tokens: chat.cached, reasoning_tokens: chat.reasoning, cost_micros: String(micros) });
      },
    );
  });

  describe('chat in', () => {
    it('sends a Gemini-shaped request (system, turns, tools, tool results by name, thinking) and answers tool calls and reasoning', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: 'Checking.', thought: 'The user wants Paris weather.', functionCalls: [{ name: 'get_weather', args: { city: 'Paris' } }] };
      const answer = await sdk(gw, key).chat.completions.create({
        model: FLASH.id,
        reasoning_effort: 'low',
        max_completion_tokens: 4000,
        temperature: 0.2,
        tools,
        tool_choice: 'required',
        stop: ['END'],
        messages: [
          { role: 'system', content: 'Be helpful.' },
          { role: 'user', content: [{ type: 'text', text: 'Weather in Rome?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_rome', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }] },
          { role: 'tool', tool_call_id: 'call_rome', content: 'Sunny' },
          { role: 'user', content: 'And Paris?' },
        ],
      });
      const [sent] = fake.requests;
      expect(sent.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
      expect(sent.headers['x-goog-api-key']).toBe('AIzaSyFake-gemini-key');
      expect(sent.headers.authorization).toBeUndefined();
      expect(sent.body).toEqual({
        systemInstruction: { parts: [{ text: 'Be helpful.' }] },
        contents: [
          { role: 'user', parts: [{ text: 'Weather in Rome?' }, { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } }] },
          { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Rome' } } }] },
          { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: 'Sunny' } } }, { text: 'And Paris?' }] },
        ],
        tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Weather', parametersJsonSchema: tools[0].function.parameters }] }],
        toolConfig: { functionCallingConfig: { mode: 'ANY' } },
        generationConfig: { maxOutputTokens: 4000, temperature: 0.2, stopSequences: ['END'], thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } },
      });
      const choice = answer.choices[0];
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.content).toBe('Checking.');
      expect((choice.message as any).reasoning_content).toBe('The user wants Paris weather.');
      expect(choice.message.tool_calls).toEqual([{ id: expect.stringMatching(/^call_[0-9a-f]{24}$/), type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }]);
      expect(answer.model).toBe(FLASH.id);
      const usage = sent.answered!.usage;
      expect(usage.thoughtsTokenCount).toBe(fakeTokenCount('The user wants Paris weather.'));
      expect(answer.usage).toMatchObject({
        prompt_tokens: usage.promptTokenCount,
        completion_tokens: usage.candidatesTokenCount! + usage.thoughtsTokenCount!,
        completion_tokens_details: { reasoning_tokens: usage.thoughtsTokenCount },
      });
      await expectCharged(accountId, usage);
      const [row] = await waitForUsageRows(db, accountId, 1);
      expect(row).toMatchObject({ reasoning_tokens: usage.thoughtsTokenCount, completion_tokens: usage.candidatesTokenCount! + usage.thoughtsTokenCount! });
    });

    it('streams a translated answer: reasoning, content, the tool call, finish and one usage chunk, charged as the fake counted', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: 'Let me check the weather for you.', thought: 'Oslo, then.', functionCalls: [{ name: 'get_weather', args: { city: 'Oslo' } }] };
      const stream = await sdk(gw, key).chat.completions.create({
        model: FLASH.id,
        stream: true,
        stream_options: { include_usage: true },
        reasoning_effort: 'medium',
        tools,
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        messages: [{ role: 'user', content: 'Oslo?' }],
      });
      let content = '';
      let reasoning = '';
      const calls: any[] = [];
      let finish: string | null = null;
      const usages: any[] = [];
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        content += choice?.delta?.content ?? '';
        reasoning += (choice?.delta as any)?.reasoning_content ?? '';
        calls.push(...(choice?.delta?.tool_calls ?? []));
        finish = choice?.finish_reason ?? finish;
        if (chunk.usage) usages.push(chunk.usage);
      }
      const sent = fake.requests[0];
      expect(sent.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent');
      expect(sent.query).toBe('?alt=sse');
      expect(sent.body.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
      expect(sent.body.generationConfig).toEqual({ maxOutputTokens: FLASH.maxOutput, thinkingConfig: { thinkingBudget: 8192, includeThoughts: true } });
      expect(content).toBe('Let me check the weather for you.');
      expect(reasoning).toBe('Oslo, then.');
      expect(calls).toEqual([{ index: 0, id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }]);
      expect(finish).toBe('tool_calls');
      const answered = sent.answered!.usage;
      expect(usages).toHaveLength(1);
      expect(usages[0]).toMatchObject({ prompt_tokens: answered.promptTokenCount, completion_tokens: answered.candidatesTokenCount! + answered.thoughtsTokenCount! });
      await expectCharged(accountId, answered);
    });

    it('charges cached and thinking tokens each at their own price, exactly, JSON and streamed', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.implicitCacheMinTokens = 100;
      fake.reply = { text: 'Short answer.', thought: 'A few thoughts about the question before answering it.' };
      const client = sdk(gw, key);
      const rules = 'You follow the house rules carefully and answer briefly. '.repeat(20);
      const ask = (question: string) => ({ model: FLASH.id, reasoning_effort: 'low' as const, messages: [{ role: 'system' as const, content: rules }, { role: 'user' as const, content: question }] });
      let start = 10_000_000n;
      const charged = async (index: number) => {
        const usage = fake.requests[index].answered!.usage;
        const cost = costMicrosByClass(PRICES, documentedClasses(usage));
        const money = await moneyOf(db, accountId);
        expect(money.charges.at(-1)!.amount).toBe(cost);
        expect(money.balance).toBe(start - cost);
        expect(money.ledgerSum).toBe(money.balance);
        start = money.balance;
        return usage;
      };
      const first = await client.chat.completions.create(ask('First question?'));
      const cold = await charged(0);
      expect(cold.cachedContentTokenCount).toBeUndefined();
      expect(first.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
      const second = await client.chat.completions.create(ask('Second question?'));
      const warm = await charged(1);
      expect(warm.cachedContentTokenCount).toBe(fakeTokenCount(rules));
      expect(warm.thoughtsTokenCount).toBeGreaterThan(0);
      expect(second.usage!.prompt_tokens_details!.cached_tokens).toBe(warm.cachedContentTokenCount);
      const stream = await client.chat.completions.create({ ...ask('Third question?'), stream: true });
      for await (const _ of stream) void _;
      const streamed = await charged(2);
      expect(streamed.cachedContentTokenCount).toBe(fakeTokenCount(rules));
      // The cached tokens cost less than the same tokens at the input price.
      expect(costMicrosByClass(PRICES, documentedClasses(warm))).toBeLessThan(costMicrosByClass({ ...PRICES, cachedInput: PRICES.input }, documentedClasses(warm)));
      const rows = await waitForUsageRows(db, accountId, 3);
      expect(rows.map((r) => [r.cached_tokens, r.reasoning_tokens])).toEqual([
        [0, cold.thoughtsTokenCount],
        [warm.cachedContentTokenCount, warm.thoughtsTokenCount],
        [streamed.cachedContentTokenCount, streamed.thoughtsTokenCount],
      ]);
    });

    it('maps a blocked prompt and a SAFETY finish to content_filter', async () => {
      const { key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: '', blockReason: 'PROHIBITED_CONTENT' };
      const blocked = await sdk(gw, key).chat.completions.create({ model: FLASH.id, messages: [{ role: 'user', content: 'Bad' }] });
      expect(blocked.choices[0]).toMatchObject({ finish_reason: 'content_filter', message: { content: '' } });
      fake.reply = { text: 'Partial', finishReason: 'SAFETY' };
      const stream = await sdk(gw, key).chat.completions.create({ model: FLASH.id, stream: true, messages: [{ role: 'user', content: 'Bad' }] });
      let finish: string | null = null;
      for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
      expect(finish).toBe('content_filter');
    });
  });

  describe('Responses and Messages in', () => {
    it('serves the Responses API, JSON and streamed, with a function call', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: '', functionCalls: [{ name: 'get_weather', args: { city: 'Lima' } }] };
      const client = sdk(gw, key);
      const rtools = [{ type: 'function' as const, name: 'get_weather', parameters: tools[0].function.parameters, strict: false }];
      const response = await client.responses.create({ model: FLASH.id, instructions: 'Be brief.', input: 'Lima?', tools: rtools });
      const call = response.output.find((item) => item.type === 'function_call') as any;
      expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Lima"}', call_id: expect.stringMatching(/^call_/) });
      expect(fake.requests[0].body.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] });
      await expectCharged(accountId, fake.requests[0].answered!.usage);

      // The call's result goes back as a functionResponse named after the call.
      fake.reply = { text: 'Sunny in Lima.' };
      const events = await client.responses.create({
        model: FLASH.id,
        stream: true,
        tools: rtools,
        input: [{ role: 'user', content: 'Lima?' }, { type: 'function_call', call_id: call.call_id, name: 'get_weather', arguments: '{"city":"Lima"}' }, { type: 'function_call_output', call_id: call.call_id, output: '{"sky":"clear"}' }],
      });
      let text = '';
      let completed: any = null;
      for await (const event of events) {
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.completed') completed = event.response;
      }
      expect(text).toBe('Sunny in Lima.');
      expect(fake.requests[1].body.contents.slice(1)).toEqual([
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Lima' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { sky: 'clear' } } }] },
      ]);
      expect(completed.usage.output_tokens).toBe(fake.requests[1].answered!.usage.candidatesTokenCount);
    });

    it('serves the Messages API through the Anthropic SDK, JSON and streamed, charged as the fake counted', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: 'Hola desde Gemini.', functionCalls: [{ name: 'lookup', args: { q: 'x' } }] };
      const client = anthropic(gw, key);
      const mtools = [{ name: 'lookup', description: 'Look up', input_schema: { type: 'object' as const, properties: { q: { type: 'string' } } } }];
      const message = await client.messages.create({ model: FLASH.id, max_tokens: 500, system: 'Answer in Spanish.', tools: mtools, messages: [{ role: 'user', content: 'Hello' }] });
      expect(message.content).toEqual([
        { type: 'text', text: 'Hola desde Gemini.' },
        { type: 'tool_use', id: expect.stringMatching(/^call_/), name: 'lookup', input: { q: 'x' } },
      ]);
      expect(message.stop_reason).toBe('tool_use');
      expect(fake.requests[0].body).toMatchObject({
        systemInstruction: { parts: [{ text: 'Answer in Spanish.' }] },
        contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
        generationConfig: { maxOutputTokens: 500 },
      });
      const usage = fake.requests[0].answered!.usage;
      expect(message.usage).toMatchObject({ input_tokens: usage.promptTokenCount, output_tokens: usage.candidatesTokenCount });
      await expectCharged(accountId, usage);

      fake.reply = { text: 'Una respuesta en partes.' };
      const stream = client.messages.stream({ model: FLASH.id, max_tokens: 500, messages: [{ role: 'user', content: 'Hello again' }] });
      const final = await stream.finalMessage();
      expect(final.content).toEqual([{ type: 'text', text: 'Una respuesta en partes.' }]);
      expect(final.stop_reason).toBe('end_turn');
      expect(final.usage.output_tokens).toBe(fake.requests[1].answered!.usage.candidatesTokenCount);
    });
  });

  describe('failures', () => {
    it.each(['status429', 'status503'] as const)('serves a %s on the first deployment from the second, charged once', async (mode) => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.failNext(mode);
      const answer = await sdk(gw, key).chat.completions.create({ model: FAILOVER.id, messages: [{ role: 'user', content: 'Hi' }] });
      expect(answer.choices[0].message.content).toBe(FakeGemini.defaultReply().text);
      expect(fake.requests).toHaveLength(1);
      expect(second.requests).toHaveLength(1);
      expect(second.requests[0].path).toBe('/v1beta/models/gemini-2.5-pro:generateContent');
      await expectCharged(accountId, second.requests[0].answered!.usage);
    });

    it('passes an upstream 400 through as upstream_rejected with Gemini\'s message, charging nothing and trying no other deployment', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.failureMessage = 'Unable to submit request because it has an empty text parameter.';
      fake.failNext('status400');
      const err = await sdk(gw, key)
        .chat.completions.create({ model: FAILOVER.id, messages: [{ role: 'user', content: 'Hi' }] })
        .catch((e) => e);
      expect(err.status).toBe(400);
      expect(err.error).toMatchObject({ code: 'upstream_rejected', message: expect.stringContaining('empty text parameter') });
      expect(second.requests).toHaveLength(0);
      expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, reserved: 0n, charges: [] });
      const [row] = await waitForUsageRows(db, accountId, 1);
      expect(row).toMatchObject({ status: 400, error_code: 'upstream_rejected', cost_micros: '0' });
    });

    it.each(['cutStream', 'errorEvent'] as const)('ends a stream broken after its first bytes (%s) with an error event, charging nothing', async (mode) => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: 'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen' };
      fake.faultAfterEvents = 2;
      fake.failNext(mode);
      const res = await postChat(gw, key, { model: FLASH.id, stream: true, messages: [{ role: 'user', content: 'Count' }] });
      expect(res.status).toBe(200);
      const text = await res.text();
      const events = text.split('\n\n').filter(Boolean);
      expect(events.some((e) => e.includes('"content":"one'))).toBe(true);
      expect(events.at(-1)).toMatch(/^data: \{"error":\{.*"code":"upstream_error"/);
      expect(text).not.toContain('[DONE]');
      expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, reserved: 0n, charges: [] });
    });

    it('treats a stream whose body ends cleanly before any finishReason (Gemini sends no end marker) as broken', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      fake.reply = { text: 'one two three four five six seven eight nine' };
      fake.faultAfterEvents = 2;
      fake.failNext('endEarly');
      const err = await (async () => {
        const stream = await sdk(gw, key).chat.completions.create({ model: FLASH.id, stream: true, messages: [{ role: 'user', content: 'Count' }] });
        for await (const _ of stream) void _;
      })().catch((e) => e);
      expect(err).toMatchObject({ message: expect.stringContaining('ended the stream before its answer finished') });
      expect(fake.requests[0].finished).toBe(true);
      expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, charges: [] });
    });
  });
});
