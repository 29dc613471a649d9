import Anthropic from '@anthropic-ai/sdk';
import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { ROOT_LOGGER } from '../src/common/logging/root-logger';
import { AdminClient } from './support/admin-client';
import { expectOneCharge, costMicros, moneyOf, PricedModel, upstreamModelOf, useFakeGateway, waitForUsageRows } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { anthropic, postMessages } from './support/messages-support';
import { parseNamedEvents } from './support/responses-support';
import { TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

const MODEL: PricedModel = { id: 'msg-chat', input: 3, output: 150, maxOutput: 4096 };
const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};
const WEATHER_CALL = { id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' };

describe('POST /v1/messages (issue 25)', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useFakeGateway([MODEL], { reply: { content: 'Thé quick brówn 狐 jumps🦊.', promptTokens: 11, completionTokens: 5 } });
  beforeAll(() => ({ fake, gw, admin, db } = suite));

  /** The account's single charge is the chat price of the usage (ledger = balance), and its usage record says /v1/messages. */
  const expectCharged = (accountId: string, promptTokens: number, completionTokens: number, streamed: boolean, credits = 1_000_000n) =>
    expectOneCharge(db, accountId, { cost: costMicros(MODEL, promptTokens, completionTokens), credits, row: { endpoint: '/v1/messages', model: MODEL.id, error_code: null, streamed, prompt_tokens: promptTokens, completion_tokens: completionTokens } });

  it('answers a plain text message as a Message and charges it exactly as chat', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const message = await anthropic(gw, key).messages.create({ model: MODEL.id, max_tokens: 100, messages: [{ role: 'user', content: 'Say it.' }] });

    expect(message).toEqual({
      id: expect.stringMatching(/^msg_[0-9a-f]{24}$/),
      type: 'message',
      role: 'assistant',
      model: MODEL.id,
      content: [{ type: 'text', text: 'Thé quick brówn 狐 jumps🦊.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 11, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cost: Number(costMicros(MODEL, 11, 5)) / 1e6 },
    });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].body).toEqual({ model: upstreamModelOf(MODEL), messages: [{ role: 'user', content: 'Say it.' }], max_completion_tokens: 100 });
    await expectCharged(accountId, 11, 5, false);
  });

  it('translates a system prompt (blocks), a multi-turn conversation, images and the sampling fields; ignores what chat has no field for', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const message = await anthropic(gw, key).messages.create({
      model: MODEL.id,
      max_tokens: 50,
      system: [{ type: 'text', text: 'You are terse.' }, { type: 'text', text: 'Answer in English.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig' }, { type: 'text', text: 'A pixel.' }] },
        { role: 'user', content: 'And now?' },
      ],
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ['###'],
      metadata: { user_id: 'user-7' },
      thinking: { type: 'enabled', budget_tokens: 1024 },
      service_tier: 'auto',
      // The SDK's newest types leave out sampling fields that the API (and Claude Code's older versions) still send.
    } as Anthropic.MessageCreateParamsNonStreaming);

    expect(message.content).toEqual([{ type: 'text', text: 'Thé quick brówn 狐 jumps🦊.' }]);
    expect(fake.requests[0].body).toEqual({
      model: upstreamModelOf(MODEL),
      messages: [
        { role: 'system', content: 'You are terse.\n\nAnswer in English.' },
        { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] },
        { role: 'assistant', content: 'A pixel.' },
        { role: 'user', content: 'And now?' },
      ],
      max_completion_tokens: 50,
      temperature: 0.5,
      top_p: 0.9,
      stop: ['###'],
      user: 'user-7',
    });
  });

  it('makes a tool use round trip: tool_use out, tool_result back in, the final answer', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const client = anthropic(gw, key);
    fake.reply.toolCalls = [WEATHER_CALL];
    const question = { role: 'user' as const, content: 'Weather in Paris?' };
    const first = await client.messages.create({ model: MODEL.id, max_tokens: 100, messages: [question], tools: [WEATHER_TOOL], tool_choice: { type: 'any', disable_parallel_tool_use: true } });

    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toEqual([{ type: 'tool_use', id: WEATHER_CALL.id, name: 'get_weather', input: { city: 'Paris' } }]);
    expect(fake.requests[0].body).toMatchObject({
      tools: [{ type: 'function', function: { name: 'get_weather', description: WEATHER_TOOL.description, parameters: WEATHER_TOOL.input_schema } }],
      tool_choice: 'required',
      parallel_tool_calls: false,
    });

    fake.reply.toolCalls = undefined;
    fake.reply.content = 'It is 21 degrees in Paris.';
    const second = await client.messages.create({
      model: MODEL.id,
      max_tokens: 100,
      tools: [WEATHER_TOOL],
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: [
        question,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: WEATHER_CALL.id, content: [{ type: 'text', text: '{"celsius":21}' }] }, { type: 'text', text: 'Thanks.' }] },
      ],
    });

    expect(second).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'It is 21 degrees in Paris.' }] });
    expect(fake.requests[1].body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: WEATHER_CALL.id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: WEATHER_CALL.id, content: '{"celsius":21}' },
      { role: 'user', content: 'Thanks.' },
    ]);
    expect(fake.requests[1].body.tool_choice).toEqual({ type: 'function', function: { name: 'get_weather' } });
    const money = await moneyOf(db, accountId);
    const cost = costMicros(MODEL, 11, 5) * 2n;
    expect(money).toMatchObject({ balance: 1_000_000n - cost, ledgerSum: 1_000_000n - cost, reserved: 0n });
  });

  it('maps stop reasons: max_tokens (charged what was produced), stop_sequence (the matched string), end_turn', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const client = anthropic(gw, key);
    const cut = await client.messages.create({ model: MODEL.id, max_tokens: 3, messages: [{ role: 'user', content: 'Say it.' }] });
    expect(cut).toMatchObject({ stop_reason: 'max_tokens', stop_sequence: null, content: [{ type: 'text', text: 'Thé quick brówn' }], usage: { output_tokens: 3 } });
    await expectCharged(accountId, 11, 3, false);

    fake.reply.stopReason = '###';
    const stopped = await client.messages.create({ model: MODEL.id, max_tokens: 100, stop_sequences: ['###'], messages: [{ role: 'user', content: 'Say it.' }] });
    expect(stopped).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: '###' });
    const streamed = await client.messages.stream({ model: MODEL.id, max_tokens: 100, stop_sequences: ['###'], messages: [{ role: 'user', content: 'Say it.' }] }).finalMessage();
    expect(streamed).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: '###' });
  });

  it("maps the upstream's cached and cache-write tokens to Anthropic's usage fields", async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply = { content: 'Cached.', promptTokens: 100, completionTokens: 1, usageDetails: { prompt: { cached_tokens: 60, cache_write_tokens: 30 } } };
    const client = anthropic(gw, key);
    const message = await client.messages.create({ model: MODEL.id, max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] });
    const usage = { input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 60, cache_creation_input_tokens: 30 };
    expect(message.usage).toEqual({ ...usage, cost: expect.any(Number) });
    const final = await client.messages.stream({ model: MODEL.id, max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] }).finalMessage();
    expect(final.usage).toMatchObject(usage);
  });

  it('streams text in Anthropic events; stream.finalMessage() assembles it; charged as the chat stream', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const stream = anthropic(gw, key).messages.stream({ model: MODEL.id, max_tokens: 100, messages: [{ role: 'user', content: 'Say it.' }] });
    let text = '';
    stream.on('text', (delta) => (text += delta));
    const final = await stream.finalMessage();

    expect(text).toBe('Thé quick brówn 狐 jumps🦊.');
    expect(final).toMatchObject({
      type: 'message', role: 'assistant', model: MODEL.id, stop_reason: 'end_turn',
      content: [{ type: 'text', text: 'Thé quick brówn 狐 jumps🦊.' }],
      usage: { input_tokens: 11, output_tokens: 5 },
    });
    expect(fake.requests[0].body).toMatchObject({ stream: true, stream_options: { include_usage: true }, max_completion_tokens: 100 });
    await expectCharged(accountId, 11, 5, true);
  });

  it('sends the events in the order Anthropic does, each named by its type', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const res = await postMessages(gw, key, { model: MODEL.id, max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Say it.' }] });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseNamedEvents(await res.text());
    for (const { event, data } of events) expect(event).toBe(data.type);
    const types = events.map((e) => e.data.type);
    expect(types.slice(0, 3)).toEqual(['message_start', 'content_block_start', 'ping']);
    expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(types.slice(3, -3).every((t) => t === 'content_block_delta')).toBe(true);
    expect(events[0].data.message).toMatchObject({ id: expect.stringMatching(/^msg_/), type: 'message', role: 'assistant', model: MODEL.id, content: [], stop_reason: null });
    // message_start carries the gateway's own count of the prompt; message_delta the upstream's figures.
    expect(events[0].data.message.usage.input_tokens).toBeGreaterThan(0);
    expect(events[1].data).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(events.filter((e) => e.data.type === 'content_block_delta').map((e) => e.data.delta.text).join('')).toBe('Thé quick brówn 狐 jumps🦊.');
    expect(events.at(-2)!.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { input_tokens: 11, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cost: Number(costMicros(MODEL, 11, 5)) / 1e6 },
    });
  });

  describe('a tool call whose arguments are not a JSON object (issue 31)', () => {
    const BROKEN_CALLS = [
      { id: 'call_broken_1', name: 'get_weather', arguments: '{"city": "Par' },
      { id: 'call_broken_2', name: 'get_weather', arguments: '["Paris"]' },
    ];
    /** The gateway's warning lines (pino's arguments), captured from its root logger. */
    let warnings: unknown[][];
    let restoreLogger: () => void;

    beforeEach(() => {
      const logger = gw.app.get<Logger>(ROOT_LOGGER);
      const level = logger.level;
      logger.level = 'warn';
      warnings = [];
      const spy = jest.spyOn(logger, 'warn').mockImplementation(((...args: unknown[]) => void warnings.push(args)) as never);
      restoreLogger = () => {
        spy.mockRestore();
        logger.level = level;
      };
    });
    afterEach(() => restoreLogger());

    const malformedCounted = async (): Promise<number> => {
      const text = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } })).text();
      const match = new RegExp(`^gateway_upstream_malformed_tool_arguments_total\\{endpoint="/v1/messages",model="${MODEL.id}"\\} (\\d+)$`, 'm').exec(text);
      return match ? Number(match[1]) : 0;
    };
    const toolWarnings = () => warnings.filter((args) => typeof args[1] === 'string' && /tool call/.test(args[1]));

    it('answers a valid Message (input {}), counts each call in the metrics and logs a warning with the request id and model, not the arguments', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.toolCalls = [...BROKEN_CALLS, WEATHER_CALL];
      const before = await malformedCounted();
      const { data: message, response } = await anthropic(gw, key)
        .messages.create({ model: MODEL.id, max_tokens: 100, messages: [{ role: 'user', content: 'Weather?' }], tools: [WEATHER_TOOL] })
        .withResponse();

      expect(message.stop_reason).toBe('tool_use');
      expect(message.content).toEqual([
        { type: 'tool_use', id: 'call_broken_1', name: 'get_weather', input: {} },
        { type: 'tool_use', id: 'call_broken_2', name: 'get_weather', input: {} },
        { type: 'tool_use', id: WEATHER_CALL.id, name: 'get_weather', input: { city: 'Paris' } },
      ]);
      expect(await malformedCounted()).toBe(before + 2);
      const requestId = response.headers.get('x-request-id');
      expect(requestId).toBeTruthy();
      expect(toolWarnings()).toEqual([[expect.objectContaining({ requestId, model: MODEL.id, context: 'Messages' }), expect.stringContaining(requestId!)]]);
      const line = JSON.stringify(toolWarnings());
      expect(line).toContain('2 tool call(s)');
      expect(line).not.toContain('Par');
      await expectCharged(accountId, 11, 5, false);
    });

    it('counts and logs them in a stream too, where the deltas are relayed as sent', async () => {
      const { key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.toolCalls = [BROKEN_CALLS[0], WEATHER_CALL];
      const before = await malformedCounted();
      const res = await postMessages(gw, key, { model: MODEL.id, max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Weather?' }], tools: [WEATHER_TOOL] });
      const events = parseNamedEvents(await res.text());

      expect(res.status).toBe(200);
      expect(events.map((e) => e.event).at(-1)).toBe('message_stop');
      const partial = events.filter((e) => e.event === 'content_block_delta').map((e) => (e.data as { delta: { partial_json?: string } }).delta.partial_json);
      expect(partial.join('')).toBe(`${BROKEN_CALLS[0].arguments}${WEATHER_CALL.arguments}`);
      expect(await malformedCounted()).toBe(before + 1);
      const requestId = res.headers.get('x-request-id');
      expect(toolWarnings()).toEqual([[expect.objectContaining({ requestId, model: MODEL.id }), expect.stringContaining('1 tool call(s)')]]);
    });

    it('counts nothing for well-formed arguments, nor for a tool call without any', async () => {
      const { key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.toolCalls = [WEATHER_CALL, { id: 'call_none', name: 'get_weather', arguments: '' }];
      const before = await malformedCounted();
      const message = await anthropic(gw, key).messages.create({ model: MODEL.id, max_tokens: 100, messages: [{ role: 'user', content: 'Weather?' }], tools: [WEATHER_TOOL] });

      expect(message.content).toEqual([
        { type: 'tool_use', id: WEATHER_CALL.id, name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'call_none', name: 'get_weather', input: {} },
      ]);
      expect(await malformedCounted()).toBe(before);
      expect(toolWarnings()).toEqual([]);
    });
  });

  it('streams tool input as input_json_delta, assembled by stream.finalMessage()', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply.toolCalls = [WEATHER_CALL, { id: 'call_2', name: 'lookup', arguments: '{"q":"rain","n":2}' }];
    const stream = anthropic(gw, key).messages.stream({ model: MODEL.id, max_tokens: 100, messages: [{ role: 'user', content: 'Weather?' }], tools: [WEATHER_TOOL, { name: 'lookup', input_schema: { type: 'object' } }] });
    const partial: string[] = [];
    stream.on('inputJson', (delta) => partial.push(delta));
    const final = await stream.finalMessage();

    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([
      { type: 'tool_use', id: WEATHER_CALL.id, name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'call_2', name: 'lookup', input: { q: 'rain', n: 2 } },
    ]);
    expect(partial.join('')).toBe('{"city":"Paris"}{"q":"rain","n":2}');
    await expectCharged(accountId, 11, 5, true);
  });

  it('counts tokens with the gateway tokenizer: no upstream call, no charge, recorded in usage', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const client = anthropic(gw, key);
    const request = { model: MODEL.id, system: 'You are terse.', messages: [{ role: 'user' as const, content: 'How many tokens is this?' }] };
    const counted = await client.messages.countTokens(request);
    const withTools = await client.messages.countTokens({ ...request, tools: [WEATHER_TOOL] });

    // 3 (reply) + 2 × 3 (framing) + role and text tokens.
    expect(counted.input_tokens).toBeGreaterThan(9);
    expect(counted.input_tokens).toBeLessThan(30);
    expect(withTools.input_tokens).toBeGreaterThan(counted.input_tokens);
    // The same count message_start reports for the same prompt.
    const events = parseNamedEvents(await (await postMessages(gw, key, { ...request, max_tokens: 10, stream: true })).text());
    expect(events[0].data.message.usage.input_tokens).toBe(counted.input_tokens);
    expect(fake.requests).toHaveLength(1);

    const rows = await waitForUsageRows(db, accountId, 3);
    const countRows = rows.filter((r) => r.endpoint === '/v1/messages/count_tokens');
    expect(countRows).toEqual([
      expect.objectContaining({ model: MODEL.id, status: 200, error_code: null, cost_micros: '0' }),
      expect.objectContaining({ model: MODEL.id, status: 200, error_code: null, cost_micros: '0' }),
    ]);
    const money = await moneyOf(db, accountId);
    expect(money.charges).toHaveLength(1);
    expect(money.charges[0].requestId).toBe(rows.find((r) => r.endpoint === '/v1/messages')!.request_id);
  });

  it('takes the key as Authorization: Bearer too, with anthropic-beta headers (a Claude-Code-shaped stream), and bills it', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
    const client = anthropic(gw, key, { bearer: true, headers: { 'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14' } });
    const tools = Array.from({ length: 16 }, (_, i) => ({
      name: `tool_${i}`,
      description: `Tool number ${i}: does a thing with files.`,
      input_schema: {
        type: 'object' as const,
        $schema: 'http://json-schema.org/draft-07/schema#',
        properties: { path: { type: 'string', description: 'An absolute path' }, limit: { type: 'number' }, flags: { type: 'array', items: { type: 'string' } } },
        required: ['path'],
        additionalProperties: false,
      },
    }));
    const stream = client.messages.stream({
      model: MODEL.id,
      max_tokens: 32000,
      system: [
        { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'You are an interactive CLI tool that helps users with software engineering tasks.', cache_control: { type: 'ephemeral' } },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: '<system-reminder>context</system-reminder>' }, { type: 'text', text: 'List the files.', cache_control: { type: 'ephemeral' } }] }],
      tools,
      metadata: { user_id: 'user_abc_account__session_123' },
      temperature: 1,
      thinking: { type: 'enabled', budget_tokens: 4000 },
      context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
    } as Anthropic.MessageStreamParams);
    const final = await stream.finalMessage();

    expect(final).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'Thé quick brówn 狐 jumps🦊.' }] });
    expect(fake.requests[0].body.tools).toHaveLength(16);
    expect(fake.requests[0].body).toMatchObject({ stream: true, max_completion_tokens: 32000, user: 'user_abc_account__session_123' });
    expect(fake.requests[0].body).not.toHaveProperty('thinking');
    expect(fake.requests[0].body).not.toHaveProperty('context_management');
    await expectCharged(accountId, 11, 5, true, 10_000_000n);
  });
});
