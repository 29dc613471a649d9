import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { expectOneCharge, costMicros, PricedModel, sdk, upstreamModelOf, useFakeGateway, waitForUsageRows } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { expectValidAgainst } from './support/openapi';
import { expectValidStream, parseNamedEvents, postResponses } from './support/responses-support';
import { TestApp } from './support/test-app';

const MODEL: PricedModel = { id: 'resp-chat', input: 3, output: 150, maxOutput: 4096 };
const WEATHER_TOOL = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
};
const WEATHER_CALL = { id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' };

describe('POST /v1/responses (issue 18)', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useFakeGateway([MODEL], { reply: { content: 'Thé quick brówn 狐 jumps🦊.', promptTokens: 11, completionTokens: 5 } });
  beforeAll(() => ({ fake, gw, admin, db } = suite));

  /** The account's single charge equals usage × price, and its usage record says /v1/responses. */
  const expectCharged = (accountId: string, promptTokens: number, completionTokens: number, streamed: boolean) =>
    expectOneCharge(db, accountId, { cost: costMicros(MODEL, promptTokens, completionTokens), credits: 1_000_000n, row: { endpoint: '/v1/responses', model: MODEL.id, error_code: null, streamed, prompt_tokens: promptTokens, completion_tokens: completionTokens } });

  it('answers a string input with a Response (validated against the spec) and charges usage × price', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const response = await sdk(gw, key).responses.create({ model: MODEL.id, input: 'Say it.' });

    expectValidAgainst('Response', response);
    expect(response).toMatchObject({ object: 'response', status: 'completed', model: MODEL.id, error: null, incomplete_details: null });
    expect(response.id).toMatch(/^resp_[0-9a-f]{48}$/);
    expect(response.output_text).toBe('Thé quick brówn 狐 jumps🦊.');
    expect(response.output).toEqual([
      expect.objectContaining({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Thé quick brówn 狐 jumps🦊.', annotations: [], logprobs: [] }] }),
    ]);
    expect(response.usage).toMatchObject({ input_tokens: 11, output_tokens: 5, total_tokens: 16 });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].body).toEqual({ model: upstreamModelOf(MODEL), messages: [{ role: 'user', content: 'Say it.' }] });
    await expectCharged(accountId, 11, 5, false);
  });

  it('translates instructions and a message list (developer, image parts, an earlier assistant turn) and echoes the parameters', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const image = 'data:image/png;base64,iVBORw0KGgo=';
    const response = await sdk(gw, key).responses.create({
      model: MODEL.id,
      instructions: 'You are terse.',
      input: [
        { role: 'developer', content: 'Answer in English.' },
        { role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: image, detail: 'low' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'A pixel.', annotations: [] }] },
        { role: 'user', content: 'And now?' },
      ],
      max_output_tokens: 100,
      temperature: 0.5,
      top_p: 0.9,
      metadata: { ticket: 'T-1' },
      user: 'user-7',
      store: false,
    } as any);

    expectValidAgainst('Response', response);
    expect(response).toMatchObject({ instructions: 'You are terse.', max_output_tokens: 100, temperature: 0.5, top_p: 0.9, metadata: { ticket: 'T-1' }, store: false });
    expect(fake.requests[0].body).toEqual({
      model: upstreamModelOf(MODEL),
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'system', content: 'Answer in English.' },
        { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: image, detail: 'low' } }] },
        { role: 'assistant', content: 'A pixel.' },
        { role: 'user', content: 'And now?' },
      ],
      max_completion_tokens: 100,
      temperature: 0.5,
      top_p: 0.9,
      user: 'user-7',
    });
  });

  it('makes a function tool round trip: function_call out, function_call_output back in', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const client = sdk(gw, key);
    fake.reply.toolCalls = [WEATHER_CALL];
    const first = await client.responses.create({ model: MODEL.id, input: 'Weather in Paris?', tools: [WEATHER_TOOL], tool_choice: 'auto', parallel_tool_calls: false });

    expectValidAgainst('Response', first);
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', call_id: WEATHER_CALL.id, name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' });
    expect(first.output.some((item) => item.type === 'message')).toBe(false);
    expect(first).toMatchObject({ tools: [WEATHER_TOOL], tool_choice: 'auto', parallel_tool_calls: false });
    expect(fake.requests[0].body).toMatchObject({
      tools: [{ type: 'function', function: { name: 'get_weather', description: WEATHER_TOOL.description, parameters: WEATHER_TOOL.parameters, strict: true } }],
      tool_choice: 'auto',
      parallel_tool_calls: false,
    });

    fake.reply.toolCalls = undefined;
    fake.reply.content = 'It is 21 degrees in Paris.';
    const second = await client.responses.create({
      model: MODEL.id,
      input: [{ role: 'user', content: 'Weather in Paris?' }, ...first.output, { type: 'function_call_output', call_id: WEATHER_CALL.id, output: '{"celsius":21}' }],
      tools: [WEATHER_TOOL],
      tool_choice: { type: 'function', name: 'get_weather' },
    } as any);

    expectValidAgainst('Response', second);
    expect(second.output_text).toBe('It is 21 degrees in Paris.');
    expect(fake.requests[1].body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: WEATHER_CALL.id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: WEATHER_CALL.id, content: '{"celsius":21}' },
    ]);
    expect(fake.requests[1].body.tool_choice).toEqual({ type: 'function', function: { name: 'get_weather' } });
  });

  it('passes text.format json_schema on as response_format and returns the JSON text', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply.content = '{"answer":42}';
    const schema = { type: 'object', properties: { answer: { type: 'integer' } }, required: ['answer'], additionalProperties: false };
    const response = await sdk(gw, key).responses.create({
      model: MODEL.id,
      input: 'The answer?',
      text: { format: { type: 'json_schema', name: 'answer', schema, strict: true } },
    });

    expectValidAgainst('Response', response);
    expect(JSON.parse(response.output_text)).toEqual({ answer: 42 });
    expect(response.text).toEqual({ format: { type: 'json_schema', name: 'answer', schema, strict: true } });
    expect(fake.requests[0].body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } });
  });

  it('is incomplete (max_output_tokens) when the allowance ran out, and charges what was produced', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const response = await sdk(gw, key).responses.create({ model: MODEL.id, input: 'Say it.', max_output_tokens: 3 });

    expectValidAgainst('Response', response);
    expect(response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, max_output_tokens: 3 });
    expect(response.output_text).toBe('Thé quick brówn');
    expect(fake.requests[0].body.max_completion_tokens).toBe(3);
    await expectCharged(accountId, 11, 3, false);
  });

  it('streams with client.responses.stream: the text as deltas, then the final Response with usage', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const stream = sdk(gw, key).responses.stream({ model: MODEL.id, input: 'Say it.' });
    let text = '';
    stream.on('response.output_text.delta', (event) => (text += event.delta));
    const final = await stream.finalResponse();

    expect(text).toBe('Thé quick brówn 狐 jumps🦊.');
    expectValidAgainst('Response', final);
    expect(final).toMatchObject({ status: 'completed', model: MODEL.id, usage: { input_tokens: 11, output_tokens: 5, total_tokens: 16 } });
    expect(final.output).toEqual([expect.objectContaining({ type: 'message', status: 'completed', content: [expect.objectContaining({ text: 'Thé quick brówn 狐 jumps🦊.' })] })]);
    expect(fake.requests[0].body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    await expectCharged(accountId, 11, 5, true);
  });

  it('streams with stream: true: every event validates, in the order the SDKs consume', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const events: any[] = [];
    for await (const event of await sdk(gw, key).responses.create({ model: MODEL.id, input: 'Say it.', stream: true })) events.push(event);

    const raw = parseNamedEvents(await (await postResponses(gw, key, { model: MODEL.id, input: 'Say it.', stream: true })).text());
    expectValidStream(raw);
    for (const list of [events, raw.map((e) => e.data)]) {
      const types = list.map((e) => e.type);
      expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
      expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
      expect(types.slice(4, -4).every((t) => t === 'response.output_text.delta')).toBe(true);
      expect(list.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('')).toBe('Thé quick brówn 狐 jumps🦊.');
      const completed = list.at(-1).response;
      expect(completed).toMatchObject({ status: 'completed', usage: { input_tokens: 11, output_tokens: 5 } });
      expect(completed.output[0].content[0].text).toBe('Thé quick brówn 狐 jumps🦊.');
      expect(list[0].response.id).toBe(completed.id);
    }
  });

  it('answers a refusal as a refusal part, streamed with refusal deltas, and charges it', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply.refusal = true;
    const answer = await sdk(gw, key).responses.create({ model: MODEL.id, input: 'Something refused.' });
    expect(answer.output).toEqual([expect.objectContaining({ type: 'message', content: [{ type: 'refusal', refusal: 'Thé quick brówn 狐 jumps🦊.' }] })]);

    const events = parseNamedEvents(await (await postResponses(gw, key, { model: MODEL.id, input: 'Something refused.', stream: true })).text());
    expectValidStream(events);
    const types = events.map((e) => e.data.type);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.refusal.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    expect(types.slice(4, -4).every((t) => t === 'response.refusal.delta')).toBe(true);
    expect(events[3].data.part).toEqual({ type: 'refusal', refusal: '' });
    expect(events.filter((e) => e.data.type === 'response.refusal.delta').map((e) => e.data.delta).join('')).toBe('Thé quick brówn 狐 jumps🦊.');
    expect(events.at(-4)!.data.refusal).toBe('Thé quick brówn 狐 jumps🦊.');
    expect(events.at(-1)!.data.response.output[0].content).toEqual([{ type: 'refusal', refusal: 'Thé quick brówn 狐 jumps🦊.' }]);
    const rows = await waitForUsageRows(db, accountId, 2);
    expect(rows.map((r) => r.cost_micros)).toEqual([String(costMicros(MODEL, 11, 5)), String(costMicros(MODEL, 11, 5))]);
  });

  it('streams a function call with function_call_arguments deltas and done', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply.toolCalls = [WEATHER_CALL];
    const res = await postResponses(gw, key, { model: MODEL.id, input: 'Weather in Paris?', tools: [WEATHER_TOOL], stream: true });
    const events = parseNamedEvents(await res.text());
    expectValidStream(events);
    expect(events.map((e) => e.data.type)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added',
      'response.function_call_arguments.delta', 'response.function_call_arguments.delta',
      'response.function_call_arguments.done', 'response.output_item.done', 'response.completed',
    ]);
    expect(events[5].data).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}', output_index: 0 });
    expect(events.at(-1)!.data.response.output).toEqual([
      expect.objectContaining({ type: 'function_call', call_id: WEATHER_CALL.id, name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' }),
    ]);
  });
});
