import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, moneyOf, PricedModel, sdk, usd, waitForUsageRows } from './support/chat-support';
import { costMicrosByClass } from './support/cost-oracle';
import { FAKE_OPENAI_KEY, FakeReply, FakeUpstream, RecordedRequest, startFakeUpstream } from './support/fake-upstream';
import { anthropic } from './support/messages-support';
import { TestApp } from './support/test-app';
import { expectChargedExactly, keyedProvider, useUpstreamGateway } from './support/upstream-gateway';

/**
 * Chat and Messages clients on a Responses-only model (issue 46, DESIGN.md section 12; docs/responses.md, "Chat and
 * Messages clients on a Responses-only model"): a catalog entry with `upstream_api: responses` at a `type: openai`
 * provider is reached on the fake OpenAI's /v1/responses, which refuses its model on chat completions as OpenAI does.
 * The fake sees exactly the translated body (src/providers/openai/chat-to-responses.ts); the client gets chat's shapes
 * (text, tool calls, finish reasons, streams, errors), and the account is charged the answer's usage by class, exactly.
 */
const KEY_ENV = 'CHAT_TO_RESPONSES_TEST_KEY';
/** gpt-5-codex's prices: cached input at a tenth of the input price; reasoning tokens are output tokens. */
const CODEX: PricedModel = { id: 'codex-chat', input: 1.25, cachedInput: 0.125, output: 10, maxOutput: 32_000 };
const UPSTREAM_MODEL = 'gpt-5-codex';
const TEXT = 'Thé quick brówn 狐 jumps🦊.';
const WEATHER = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'The weather now.', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }, strict: true },
};

describe('chat and Messages clients on a Responses-only model (upstream_api: responses)', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  useUpstreamGateway({
    fakes: async () => ({ fake: await startFakeUpstream() }),
    config: (fakes, raw) => {
      raw.providers.oai = keyedProvider('openai', fakes.fake.url, KEY_ENV, FAKE_OPENAI_KEY);
      raw.catalog.push(chatCatalogEntry(CODEX, { provider: 'oai', upstream_model: UPSTREAM_MODEL, upstream_api: 'responses' }));
    },
    ready: (suite) => ({ fakes: { fake }, gw, admin, db } = suite),
  });
  beforeEach(() => {
    fake.reply = { content: TEXT, promptTokens: 1200, completionTokens: 300, usageDetails: { prompt: { cached_tokens: 1024 }, completion: { reasoning_tokens: 200 } } };
  });

  const account = () => admin.createAccount({ creditsUsd: '10' });
  /** The fake's reply as token classes: input tokens the prompt (cached among them), output tokens the completion (reasoning among them). */
  const classesOf = (reply: FakeReply, completion = reply.completionTokens) => ({ prompt: reply.promptTokens, completion, cached: Number(reply.usageDetails?.prompt?.cached_tokens ?? 0) });
  const costOf = (reply: FakeReply, completion?: number) => costMicrosByClass(CODEX, classesOf(reply, completion));
  /** Every request reached /v1/responses, none chat completions (where the fake refuses the model). */
  const responsesBodies = () => {
    expect(fake.requests.map((r: RecordedRequest) => r.path)).toEqual(fake.requests.map(() => '/v1/responses'));
    return fake.requests.map((r) => r.body);
  };

  it('answers JSON: the translated body reaches /v1/responses exactly, the answer is chat\'s, cached and reasoning tokens charged by class', async () => {
    const { accountId, key } = await account();
    const { data: completion, response } = await sdk(gw, key)
      .chat.completions.create({
        model: CODEX.id,
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Say hi.' },
        ],
        max_completion_tokens: 500,
        reasoning_effort: 'low',
        user: 'user-1',
        store: true,
        stop: ['END'],
        seed: 7,
      })
      .withResponse();
    expect(responsesBodies()).toEqual([
      {
        model: UPSTREAM_MODEL,
        input: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Say hi.' },
        ],
        max_output_tokens: 500,
        reasoning: { effort: 'low' },
        user: 'user-1',
        store: false,
      },
    ]);
    expect(fake.requests[0].headers.authorization).toBe(`Bearer ${FAKE_OPENAI_KEY}`);
    expect(completion).toMatchObject({ object: 'chat.completion', model: CODEX.id, choices: [{ index: 0, message: { role: 'assistant', content: TEXT }, finish_reason: 'stop' }] });
    expect(completion.usage).toMatchObject({ prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500, prompt_tokens_details: { cached_tokens: 1024 }, completion_tokens_details: { reasoning_tokens: 200 } });
    const charge = await expectChargedExactly(db, accountId, costOf(fake.reply));
    expect((completion.usage as { cost?: number }).cost).toBe(Number(charge) / 1e6);
    expect(response.headers.get('x-gateway-cost-usd')).toBe(usd(charge));
    // The Responses API has no stop sequences and no seed: not sent, and named.
    expect(response.headers.get('x-gateway-ignored-params')).toBe('store,stop,seed');
    const [row] = await waitForUsageRows(db, accountId, 1);
    expect(row).toMatchObject({ model: CODEX.id, prompt_tokens: 1200, completion_tokens: 300, cached_tokens: 1024, reasoning_tokens: 200, cost_micros: String(charge) });
  });

  it('streams: text deltas, finish_reason stop, the usage chunk with its cost; charged as the JSON answer', async () => {
    const { accountId, key } = await account();
    const stream = await sdk(gw, key).chat.completions.create({ model: CODEX.id, messages: [{ role: 'user', content: 'Say hi.' }], stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(responsesBodies()).toEqual([{ model: UPSTREAM_MODEL, input: [{ role: 'user', content: 'Say hi.' }], store: false, stream: true }]);
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe(TEXT);
    expect(chunks.flatMap((c) => c.choices.map((choice) => choice.finish_reason)).filter(Boolean)).toEqual(['stop']);
    const usage = chunks.at(-1)!.usage as OpenAI.CompletionUsage & { cost?: number };
    expect(usage).toMatchObject({ prompt_tokens: 1200, completion_tokens: 300, prompt_tokens_details: { cached_tokens: 1024 }, completion_tokens_details: { reasoning_tokens: 200 } });
    const charge = await expectChargedExactly(db, accountId, costOf(fake.reply));
    expect(usage.cost).toBe(Number(charge) / 1e6);
    const [row] = await waitForUsageRows(db, accountId, 1);
    expect(row).toMatchObject({ streamed: true, cached_tokens: 1024, reasoning_tokens: 200, cost_micros: String(charge) });
  });

  it('runs a tool loop: tools and tool_choice flattened, the call streamed (finish_reason tool_calls), its result sent back as function_call_output', async () => {
    const { accountId, key } = await account();
    const called: FakeReply = { ...fake.reply, toolCalls: [{ id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' }], argumentPieces: 3 };
    const answered: FakeReply = { content: 'Clear in Paris.', promptTokens: 1400, completionTokens: 20 };
    fake.responses.replyFor = (body) => (body.input.some((item: { type?: string }) => item.type === 'function_call_output') ? answered : called);
    const client = sdk(gw, key);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const stream = await client.chat.completions.create({ model: CODEX.id, messages, tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false, stream: true });
    const deltas: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    const finishes: string[] = [];
    for await (const chunk of stream) {
      deltas.push(...(chunk.choices[0]?.delta?.tool_calls ?? []));
      if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
    }
    expect(finishes).toEqual(['tool_calls']);
    expect(deltas[0]).toMatchObject({ index: 0, id: 'call_weather_1', type: 'function', function: { name: 'get_weather' } });
    expect(deltas.map((d) => d.function?.arguments ?? '').join('')).toBe('{"city":"Paris"}');
    messages.push(
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_weather_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_weather_1', content: '{"sky":"clear"}' },
    );
    const second = await client.chat.completions.create({ model: CODEX.id, messages, tools: [WEATHER], tool_choice: 'auto' });
    expect(second.choices[0]).toMatchObject({ message: { content: 'Clear in Paris.' }, finish_reason: 'stop' });
    const tool = { type: 'function', name: 'get_weather', description: 'The weather now.', parameters: WEATHER.function.parameters, strict: true };
    expect(responsesBodies()).toEqual([
      { model: UPSTREAM_MODEL, input: [{ role: 'user', content: 'Weather in Paris?' }], tools: [tool], tool_choice: { type: 'function', name: 'get_weather' }, parallel_tool_calls: false, store: false, stream: true },
      {
        model: UPSTREAM_MODEL,
        input: [
          { role: 'user', content: 'Weather in Paris?' },
          { type: 'function_call', call_id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call_output', call_id: 'call_weather_1', output: '{"sky":"clear"}' },
        ],
        tools: [tool],
        tool_choice: 'auto',
        store: false,
      },
    ]);
    const money = await moneyOf(db, accountId);
    expect(money.charges.map((c) => c.amount)).toEqual([costOf(called), costOf(answered)]);
    expect(money).toMatchObject({ balance: 10_000_000n - costOf(called) - costOf(answered), reserved: 0n, ledgerSum: money.balance });
  });

  it('runs a custom tool: its call answered as chat\'s custom tool call, its output sent back as custom_tool_call_output', async () => {
    const { accountId, key } = await account();
    const called: FakeReply = { content: '', promptTokens: 900, completionTokens: 40, customToolCalls: [{ id: 'call_exec_1', name: 'exec', input: 'ls -la /tmp' }] };
    const answered: FakeReply = { content: 'Two files.', promptTokens: 950, completionTokens: 10 };
    fake.responses.replyFor = (body) => (body.input.some((item: { type?: string }) => item.type === 'custom_tool_call_output') ? answered : called);
    const client = sdk(gw, key);
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'custom', custom: { name: 'exec', description: 'Runs a shell command.' } }];
    const first = await client.chat.completions.create({ model: CODEX.id, messages: [{ role: 'user', content: 'List /tmp.' }], tools });
    expect(first.choices[0]).toMatchObject({ message: { content: null, tool_calls: [{ id: 'call_exec_1', type: 'custom', custom: { name: 'exec', input: 'ls -la /tmp' } }] }, finish_reason: 'tool_calls' });
    const second = await client.chat.completions.create({
      model: CODEX.id,
      tools,
      messages: [
        { role: 'user', content: 'List /tmp.' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_exec_1', type: 'custom', custom: { name: 'exec', input: 'ls -la /tmp' } }] },
        { role: 'tool', tool_call_id: 'call_exec_1', content: 'a.txt\nb.txt' },
      ],
    });
    expect(second.choices[0].message.content).toBe('Two files.');
    expect(responsesBodies()[1]).toEqual({
      model: UPSTREAM_MODEL,
      input: [
        { role: 'user', content: 'List /tmp.' },
        { type: 'custom_tool_call', call_id: 'call_exec_1', name: 'exec', input: 'ls -la /tmp' },
        { type: 'custom_tool_call_output', call_id: 'call_exec_1', output: 'a.txt\nb.txt' },
      ],
      tools: [{ type: 'custom', name: 'exec', description: 'Runs a shell command.' }],
      store: false,
    });
    expect((await moneyOf(db, accountId)).charges.map((c) => c.amount)).toEqual([costOf(called), costOf(answered)]);
  });

  it('sends an image part as input_image (its detail kept, auto by default) and a file part as input_file', async () => {
    const { accountId, key } = await account();
    const PDF = 'data:application/pdf;base64,JVBERi0xLjQKJcOkw7zDtsOfCjEgMCBvYmoKPDw+PgplbmRvYmoKdHJhaWxlcgo8PD4+CiUlRU9G';
    const png = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    await sdk(gw, key).chat.completions.create({
      model: CODEX.id,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What are these?' },
            { type: 'image_url', image_url: { url: png, detail: 'high' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
            { type: 'file', file: { filename: 'note.pdf', file_data: PDF } },
          ],
        },
      ],
    });
    expect(responsesBodies()[0].input).toEqual([
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'What are these?' },
          { type: 'input_image', image_url: png, detail: 'high' },
          { type: 'input_image', image_url: 'https://example.com/cat.png', detail: 'auto' },
          { type: 'input_file', filename: 'note.pdf', file_data: PDF },
        ],
      },
    ]);
    await expectChargedExactly(db, accountId, costOf(fake.reply));
  });

  it('says finish_reason length for an answer cut at max_output_tokens (JSON and stream), charged for what was produced', async () => {
    const { accountId, key } = await account();
    const words = Array.from({ length: 30 }, (_, i) => `wörd${i}`);
    // A prompt count within the hold's bound of the prompt (the charge never passes the hold).
    fake.reply = { content: words.join(' '), promptTokens: 12, completionTokens: 30 };
    const client = sdk(gw, key);
    const cut = await client.chat.completions.create({ model: CODEX.id, messages: [{ role: 'user', content: 'Count.' }], max_tokens: 16 });
    expect(cut.choices[0]).toMatchObject({ message: { content: words.slice(0, 16).join(' ') }, finish_reason: 'length' });
    expect(cut.usage).toMatchObject({ completion_tokens: 16 });
    const stream = await client.chat.completions.create({ model: CODEX.id, messages: [{ role: 'user', content: 'Count.' }], max_tokens: 16, stream: true });
    const finishes: string[] = [];
    for await (const chunk of stream) if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
    expect(finishes).toEqual(['length']);
    expect(responsesBodies().map((b) => b.max_output_tokens)).toEqual([16, 16]);
    expect((await moneyOf(db, accountId)).charges.map((c) => c.amount)).toEqual([costOf(fake.reply, 16), costOf(fake.reply, 16)]);
  });

  it('refuses before any upstream call what Responses cannot answer (n > 1, a limit below 16): 400, nothing charged', async () => {
    const { accountId, key } = await account();
    const client = sdk(gw, key);
    const failure = (body: Record<string, unknown>) => client.chat.completions.create({ model: CODEX.id, messages: [{ role: 'user', content: 'x' }], ...body } as never).then(
      () => null,
      (e: InstanceType<typeof OpenAI.APIError>) => ({ status: e.status, code: e.code, message: e.message }),
    );
    expect(await failure({ n: 2 })).toEqual({ status: 400, code: 'upstream_rejected', message: expect.stringContaining('n: 2 asks for several answers') });
    expect(await failure({ max_tokens: 8 })).toEqual({ status: 400, code: 'upstream_rejected', message: expect.stringContaining('max_tokens: 8 is below 16') });
    expect(fake.requests).toHaveLength(0);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, reserved: 0n, charges: [] });
  });

  it("relays the upstream's errors with their codes: OpenAI's 400 as upstream_rejected, a 429 with its Retry-After, a 500 as 502; nothing charged", async () => {
    const { accountId, key } = await account();
    const client = sdk(gw, key);
    const ask = (body: Record<string, unknown> = {}) => client.chat.completions.create({ model: CODEX.id, messages: [{ role: 'user', content: 'x' }], ...body } as never).then(
      () => null,
      (e: InstanceType<typeof OpenAI.APIError>) => ({ status: e.status, code: e.code, message: e.message, retryAfter: e.headers?.get('retry-after') ?? null }),
    );
    // A value the gateway passes on and OpenAI's schema refuses: its own 400, naming the Responses field.
    expect(await ask({ reasoning_effort: 'extreme' })).toEqual({ status: 400, code: 'upstream_rejected', message: expect.stringContaining("'reasoning.effort'"), retryAfter: null });
    expect(fake.requests[0].body.reasoning).toEqual({ effort: 'extreme' });
    fake.resetState();
    fake.retryAfterS = 7;
    fake.failNext('status429', 10);
    expect(await ask()).toMatchObject({ status: 429, code: 'upstream_rejected', retryAfter: '7' });
    expect(responsesBodies().length).toBeGreaterThan(0);
    fake.resetState();
    fake.failNext('status500', 10);
    expect(await ask()).toMatchObject({ status: 502, code: 'upstream_error' });
    expect(responsesBodies().length).toBeGreaterThan(0);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, reserved: 0n, charges: [] });
  });

  it('serves a Messages client too: Messages → chat → Responses, the tool call answered as a tool_use block, charged by class', async () => {
    const { accountId, key } = await account();
    fake.reply = { ...fake.reply, toolCalls: [{ id: 'call_lookup_1', name: 'lookup', arguments: '{"q":"orchid"}' }] };
    const { data: message, response } = await anthropic(gw, key)
      .messages.create({
        model: CODEX.id,
        max_tokens: 1024,
        system: 'Be brief.',
        tools: [{ name: 'lookup', description: 'Looks a word up.', input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } }],
        tool_choice: { type: 'auto' },
        stop_sequences: ['END'],
        messages: [{ role: 'user', content: 'Look up orchid.' }],
      })
      .withResponse();
    // The Responses API has no stop sequences: not sent, and named.
    expect(response.headers.get('x-gateway-ignored-params')).toBe('stop_sequences');
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: CODEX.id, stop_reason: 'tool_use', content: [{ type: 'tool_use', id: 'call_lookup_1', name: 'lookup', input: { q: 'orchid' } }] });
    expect(responsesBodies()).toEqual([
      {
        model: UPSTREAM_MODEL,
        input: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Look up orchid.' },
        ],
        tools: [{ type: 'function', name: 'lookup', description: 'Looks a word up.', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] }, strict: false }],
        tool_choice: 'auto',
        max_output_tokens: 1024,
        store: false,
      },
    ]);
    const charge = await expectChargedExactly(db, accountId, costOf(fake.reply));
    expect((message.usage as Anthropic.Usage & { cost?: number }).cost).toBe(Number(charge) / 1e6);
    expect(message.usage).toMatchObject({ input_tokens: 176, cache_read_input_tokens: 1024, output_tokens: 300 });
  });

  it('streams to a Messages client in its own events: text deltas, stop_reason end_turn, usage with its cost', async () => {
    const { accountId, key } = await account();
    const stream = anthropic(gw, key).messages.stream({ model: CODEX.id, max_tokens: 1024, messages: [{ role: 'user', content: 'Say hi.' }] });
    const types: string[] = [];
    let deltaUsage: (Anthropic.MessageDeltaUsage & { cost?: number }) | undefined;
    stream.on('streamEvent', (event) => {
      types.push(event.type);
      if (event.type === 'message_delta') deltaUsage = event.usage;
    });
    const message = await stream.finalMessage();
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    expect(message).toMatchObject({ model: CODEX.id, stop_reason: 'end_turn', content: [{ type: 'text', text: TEXT }] });
    expect(responsesBodies()).toEqual([{ model: UPSTREAM_MODEL, input: [{ role: 'user', content: 'Say hi.' }], max_output_tokens: 1024, store: false, stream: true }]);
    const charge = await expectChargedExactly(db, accountId, costOf(fake.reply));
    // The SDK's finalMessage keeps only the usage fields it knows: the charge rides on message_delta's usage.
    expect(deltaUsage?.cost).toBe(Number(charge) / 1e6);
  });
});
