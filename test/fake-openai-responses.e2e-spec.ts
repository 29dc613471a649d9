import OpenAI from 'openai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectValidAgainst } from './support/openapi';
import { FAKE_OPENAI_KEY, FakeUpstream, openAiUnauthorized, startFakeUpstream } from './support/fake-upstream';
import { newReasoningKey } from './support/fake-openai-responses-reasoning';

// The fake OpenAI's Responses API is only useful if the official SDK takes what it says and it refuses what OpenAI refuses.
describe('fake OpenAI, Responses API (self-check with the openai SDK)', () => {
  let fake: FakeUpstream;
  let sdk: OpenAI;
  const TEXT = 'Thé quick brówn 狐 jumps🦊.';
  const WEATHER_TOOL = { type: 'function' as const, name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }, strict: true };
  const failure = (promise: Promise<unknown>) => promise.then(() => 'served', (e) => ({ status: e.status, error: e.error }));
  const post = (path: string, body: string, key: string | null = FAKE_OPENAI_KEY) =>
    fetch(`${fake.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, body });
  const invalid = (message: string, param: string | null, code: string | null) => ({ message, type: 'invalid_request_error', param, code });
  // OpenAI sends `user: null`, and `usage: null` until the response completes, which its schema types as a string and an
  // object (a recorded OpenAI stream: github.com/SwiftedMind/SwiftAgent, Tests/SwiftAgentTests/OpenAI/OpenAIStreamingToolCallsTests.swift);
  // the fake sends them as OpenAI does, and only they are left out before the schema check.
  const schemaView = (value: any): any => JSON.parse(JSON.stringify(value, function (this: any, k, v) {
    return (k === 'user' || k === 'usage') && v === null && this?.object === 'response' ? undefined : v;
  }));
  // The SDK's stream helper adds its parse results (`parsed`, `parsed_arguments`, `output_parsed`) and `output_text`.
  const asSent = (response: unknown) => JSON.parse(JSON.stringify(response, (k, v) => (['parsed', 'parsed_arguments', 'output_parsed', 'output_text'].includes(k) ? undefined : v)));

  beforeAll(async () => {
    fake = await startFakeUpstream();
    sdk = new OpenAI({ apiKey: FAKE_OPENAI_KEY, baseURL: fake.url, maxRetries: 0, timeout: 5000 });
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.resetState();
    fake.reply = { content: TEXT, promptTokens: 20, completionTokens: 9 };
  });

  it('answers a response object as OpenAI shapes it: message, usage with its details, the tier served; store recorded', async () => {
    fake.reply.usageDetails = { prompt: { cached_tokens: 8 }, completion: { reasoning_tokens: 3 } };
    const response = await sdk.responses.create({ model: 'gpt-6.2-sol', input: 'Say hi.', service_tier: 'priority' });
    expectValidAgainst('Response', schemaView(response));
    expect(response).toMatchObject({ object: 'response', status: 'completed', model: 'gpt-6.2-sol', service_tier: 'priority', store: true, output_text: TEXT, error: null });
    expect(response.id).toMatch(/^resp_[0-9a-f]{48}$/);
    expect(response.output).toEqual([{ id: expect.stringMatching(/^msg_/), type: 'message', status: 'completed', content: [{ type: 'output_text', annotations: [], logprobs: [], text: TEXT }], role: 'assistant' }]);
    expect(response.usage).toEqual({ input_tokens: 20, input_tokens_details: { cached_tokens: 8, cache_write_tokens: 0 }, output_tokens: 9, output_tokens_details: { reasoning_tokens: 3 }, total_tokens: 29 });
    fake.downgradePriority = true;
    expect((await sdk.responses.create({ model: 'gpt-6.2-sol', input: 'x', service_tier: 'fast' as 'priority', store: false })).service_tier).toBe('default');
    expect(fake.requests.map((r) => [r.responses?.store, r.responses?.responseId])).toEqual([[true, response.id], [false, expect.stringMatching(/^resp_/)]]);
  });

  it('streams the events OpenAI names, in its order, numbered, and the SDK rebuilds the same response', async () => {
    fake.reply.reasoning = { summary: ['Thinking it over.'] };
    const stream = sdk.responses.stream({ model: 'gpt-6.2-sol', input: 'Say hi.', reasoning: { effort: 'low', summary: 'auto' } });
    const events: any[] = [];
    for await (const event of stream) events.push(event);
    const final = await stream.finalResponse();
    events.forEach((event) => expectValidAgainst('ResponseStreamEvent', schemaView(event)));
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type).filter((t, i, all) => !t.endsWith('.delta') || all[i - 1] !== t);
    expect(types).toEqual([
      'response.created', 'response.in_progress',
      'response.output_item.added', 'response.reasoning_summary_part.added', 'response.reasoning_summary_text.delta', 'response.reasoning_summary_text.done', 'response.reasoning_summary_part.done', 'response.output_item.done',
      'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.completed',
    ]);
    expect(events[0].response).toMatchObject({ status: 'in_progress', output: [], usage: null, service_tier: 'auto' });
    expect(events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('')).toBe(TEXT);
    expect(events.filter((e) => e.type.endsWith('.delta')).every((e) => typeof e.obfuscation === 'string')).toBe(true);
    expect(asSent(final)).toEqual(events.at(-1).response);
    expect(final.output_text).toBe(TEXT);
    expect(final.output[0]).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'Thinking it over.' }] });
  });

  it('frames events as OpenAI does (event: and data: lines, no [DONE]), obfuscation off when asked', async () => {
    fake.sseFraming = 'exact';
    const res = await post('/responses', JSON.stringify({ model: 'm', input: 'x', stream: true, stream_options: { include_obfuscation: false } }));
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const blocks = (await res.text()).split('\n\n').filter(Boolean);
    expect([blocks[0].split('\n')[0], blocks.at(-1)!.split('\n')[0]]).toEqual(['event: response.created', 'event: response.completed']);
    expect(blocks.every((b) => /^event: (\S+)\ndata: (\{.*\})$/.test(b) && JSON.parse(b.split('\ndata: ')[1]).type === b.slice(7, b.indexOf('\n')))).toBe(true);
    expect(blocks.some((b) => b.includes('"obfuscation"') || b.includes('[DONE]'))).toBe(false);
  });

  it('cuts the answer at max_output_tokens (16 at least, as the schema says): incomplete, in JSON and in the stream', async () => {
    const words = Array.from({ length: 30 }, (_, i) => `wörd${i}`);
    fake.reply = { content: words.join(' '), promptTokens: 4, completionTokens: 30 };
    const cut = await sdk.responses.create({ model: 'm', input: 'x', max_output_tokens: 16 });
    expect(cut).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output_text: words.slice(0, 16).join(' '), usage: { output_tokens: 16 } });
    const stream = sdk.responses.stream({ model: 'm', input: 'x', max_output_tokens: 16 });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types.at(-1)).toBe('response.incomplete');
    expect((await stream.finalResponse()).output_text).toBe(words.slice(0, 16).join(' '));
    expect(await failure(sdk.responses.create({ model: 'm', input: 'x', max_output_tokens: 15 }))).toEqual({ status: 400, error: invalid("Invalid value for 'max_output_tokens': must be >= 16.", 'max_output_tokens', 'invalid_value') });
  });

  it('runs a function-tool loop: function_call, then the function_call_output with the reasoning sent back byte for byte', async () => {
    fake.reply.reasoning = { summary: ['Need the weather.'] };
    fake.responses.replyFor = (body) =>
      body.input.some((i: any) => i.type === 'function_call_output') ? undefined : { ...fake.reply, toolCalls: [{ id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' }], argumentPieces: 3 };
    const input: any[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const asked = { model: 'gpt-5-codex', tools: [WEATHER_TOOL], include: ['reasoning.encrypted_content' as const], store: false };
    const stream = sdk.responses.stream({ ...asked, input });
    const argumentDeltas: string[] = [];
    stream.on('response.function_call_arguments.delta', (e) => argumentDeltas.push(e.delta));
    let completed: any;
    stream.on('response.completed', (e) => (completed = e.response));
    await stream.finalResponse();
    expect(argumentDeltas).toHaveLength(3);
    expect(argumentDeltas.join('')).toBe('{"city":"Paris"}');
    const [reasoning, call] = completed.output;
    expect(reasoning).toMatchObject({ type: 'reasoning', encrypted_content: expect.stringMatching(/^gAAAAA[A-Za-z0-9_-]+=*$/) });
    expect(call).toMatchObject({ type: 'function_call', call_id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' });
    const second = await sdk.responses.create({ ...asked, input: [...input, ...completed.output, { type: 'function_call_output', call_id: call.call_id, output: '{"sky":"clear"}' }] });
    expect(second.output_text).toBe(TEXT);
    expect(fake.requests[1].responses).toMatchObject({ store: false, include: ['reasoning.encrypted_content'], reasoningItems: [{ id: reasoning.id, encrypted: true, intact: true }], reasoningIntact: true });
    expect(fake.requests[1].body.input[1].encrypted_content).toBe(reasoning.encrypted_content);
  });

  it('answers custom tool calls (custom_tool_call, input deltas) and takes their output back', async () => {
    fake.reply.customToolCalls = [{ id: 'call_exec_1', name: 'exec', input: 'ls -la /tmp' }];
    const tools = [{ type: 'custom' as const, name: 'exec', description: 'Runs a shell command.' }];
    const json = await sdk.responses.create({ model: 'gpt-6.2-sol', input: 'List /tmp.', tools });
    expect(json.output).toEqual([{ id: expect.stringMatching(/^ctc_/), type: 'custom_tool_call', call_id: 'call_exec_1', name: 'exec', input: 'ls -la /tmp' }]);
    const stream = sdk.responses.stream({ model: 'gpt-6.2-sol', input: 'List /tmp.', tools });
    const events: any[] = [];
    for await (const event of stream) events.push(event);
    expect(events.filter((e) => e.type === 'response.custom_tool_call_input.delta').map((e) => e.delta).join('')).toBe('ls -la /tmp');
    expect(events.find((e) => e.type === 'response.custom_tool_call_input.done')).toMatchObject({ input: 'ls -la /tmp', output_index: 0 });
    expect((await stream.finalResponse()).output[0]).toMatchObject({ type: 'custom_tool_call', input: 'ls -la /tmp' });
    fake.reply.customToolCalls = undefined;
    const history: any[] = [{ role: 'user', content: 'List /tmp.' }, ...json.output, { type: 'custom_tool_call_output', call_id: 'call_exec_1', output: 'a b' }];
    const next = await sdk.responses.create({ model: 'gpt-6.2-sol', tools, input: history });
    expect(next.output_text).toBe(TEXT);
  });

  it('runs the web searches it is told when the request offers web_search: web_search_call items, and their events in a stream', async () => {
    fake.responses.webSearches = [{ query: 'weather Paris', sources: ['https://example.com/paris'] }, { query: 'weather Lyon' }];
    const asked = { model: 'gpt-5', input: 'Weather?', tools: [{ type: 'web_search' as const }], include: ['web_search_call.action.sources' as const] };
    const json = await sdk.responses.create(asked);
    expectValidAgainst('Response', schemaView(json));
    expect(json.output.map((i) => i.type)).toEqual(['web_search_call', 'web_search_call', 'message']);
    expect(json.output[0]).toEqual({ id: expect.stringMatching(/^ws_[0-9a-f]{48}$/), type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'weather Paris', sources: [{ type: 'url', url: 'https://example.com/paris' }] } });
    const events: any[] = [];
    for await (const event of sdk.responses.stream({ ...asked, include: [] })) events.push(event);
    events.forEach((event) => expectValidAgainst('ResponseStreamEvent', schemaView(event)));
    const searchId = events.find((e) => e.type === 'response.output_item.added').item.id;
    expect(events.filter((e) => e.item_id === searchId || e.item?.id === searchId).map((e) => [e.type, e.item?.status ?? null])).toEqual([
      ['response.output_item.added', 'in_progress'], ['response.web_search_call.in_progress', null], ['response.web_search_call.searching', null],
      ['response.web_search_call.completed', null], ['response.output_item.done', 'completed'],
    ]);
    expect(events.at(-1).response.output.slice(0, 2).map((i: any) => i.action)).toEqual([{ type: 'search', query: 'weather Paris' }, { type: 'search', query: 'weather Lyon' }]);
    expect((await sdk.responses.create({ model: 'gpt-5', input: 'Weather?' })).output.map((i) => i.type)).toEqual(['message']);
  });

  it("refuses a tool's output whose call_id no call of its kind in input has, with OpenAI's 400", async () => {
    const call = { type: 'function_call' as const, call_id: 'call_weather_1', name: 'get_weather', arguments: '{"city":"Paris"}' };
    const custom = { type: 'custom_tool_call' as const, call_id: 'call_exec_1', name: 'exec', input: 'ls' };
    const ask = (input: any[]) => failure(sdk.responses.create({ model: 'm', input: [{ role: 'user', content: 'Go.' }, ...input] }));
    expect(await ask([call, { type: 'function_call_output', call_id: 'call_weather_1', output: 'sunny' }, custom, { type: 'custom_tool_call_output', call_id: 'call_exec_1', output: 'a' }])).toBe('served');
    expect(await ask([{ type: 'function_call_output', call_id: 'call_gone_7', output: 'sunny' }])).toEqual({ status: 400, error: invalid('No tool call found for function call output with call_id call_gone_7.', 'input', null) });
    expect(await ask([custom, { type: 'function_call_output', call_id: 'call_exec_1', output: 'a' }])).toEqual({ status: 400, error: invalid('No tool call found for function call output with call_id call_exec_1.', 'input', null) });
    expect(await ask([call, { type: 'custom_tool_call_output', call_id: 'call_weather_1', output: 'a' }])).toEqual({ status: 400, error: invalid('No tool call found for custom tool call output with call_id call_weather_1.', 'input', null) });
    expect(fake.responses.answered).toHaveLength(1);
  });

  it('refuses reasoning that is not byte for byte what it issued (tampered, re-spelled, the incomplete added copy, another key)', async () => {
    fake.reply.reasoning = { summary: [] };
    const events: any[] = [];
    for await (const e of await sdk.responses.create({ model: 'm', input: 'x', include: ['reasoning.encrypted_content'], store: false, stream: true })) events.push(e);
    const added = events.find((e) => e.type === 'response.output_item.added').item.encrypted_content;
    const done = events.find((e) => e.type === 'response.output_item.done').item.encrypted_content;
    // Fernet's base64 keeps its padding; with one `=`, the last letter's two low bits are unused: flipping one spells the same bytes.
    expect(done).toMatch(/[^=]=$/);
    const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const respelled = `${done.slice(0, -2)}${letters[letters.indexOf(done.at(-2)!) ^ 1]}=`;
    expect(Buffer.from(respelled, 'base64')).toEqual(Buffer.from(done, 'base64'));
    const send = (encrypted_content: string) => failure(sdk.responses.create({ model: 'm', store: false, input: [{ type: 'reasoning', summary: [], encrypted_content }, { role: 'user', content: 'next' }] as any[] }));
    const refusal = (content: string) => ({ status: 400, error: invalid(`The encrypted content ${content.slice(0, 4)}...${content.slice(-4)} could not be verified. Reason: Encrypted content could not be decrypted or parsed.`, null, 'invalid_encrypted_content') });
    expect(await send(done)).toBe('served');
    const flipped = `${done.slice(0, 40)}${done[40] === 'A' ? 'B' : 'A'}${done.slice(41)}`;
    const unpadded = done.replace(/=+$/, '');
    for (const bad of [flipped, added, unpadded, respelled]) expect(await send(bad)).toEqual(refusal(bad));
    expect(fake.requests.slice(1).map((r) => r.responses?.reasoningIntact)).toEqual([true, false, false, false, false]);
    fake.responses.reasoningKey = newReasoningKey();
    expect(await send(done)).toEqual(refusal(done));
  });

  it('keeps only the ids of what it stored: previous_response_id and items by id are found after store, not without', async () => {
    fake.reply.reasoning = { summary: ['s'] };
    const stored = await sdk.responses.create({ model: 'm', input: 'x' });
    const unstored = await sdk.responses.create({ model: 'm', input: 'x', store: false });
    expect((await sdk.responses.create({ model: 'm', input: 'y', previous_response_id: stored.id })).previous_response_id).toBe(stored.id);
    expect(fake.requests[2].responses?.previousResponseId).toBe(stored.id);
    for (const id of [unstored.id, 'resp_never_issued']) {
      expect(await failure(sdk.responses.create({ model: 'm', input: 'y', previous_response_id: id }))).toEqual({ status: 400, error: invalid(`Previous response with id '${id}' not found.`, 'previous_response_id', 'previous_response_not_found') });
    }
    const byId = (id: string) => failure(sdk.responses.create({ model: 'm', input: [{ type: 'reasoning', id, summary: [] }, { type: 'item_reference', id }] }));
    expect(await byId(stored.output[0].id!)).toBe('served');
    const missing = unstored.output[0].id!;
    expect(await byId(missing)).toEqual({ status: 404, error: invalid(`Item with id '${missing}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`, 'input', null) });
  });

  it("refuses with OpenAI's status and body: unknown field, chat's output limits, bad types, a wrong or missing key, no JSON", async () => {
    const cases: [Record<string, unknown>, ReturnType<typeof invalid>][] = [
      [{ temprature: 0.2 }, invalid("Unknown parameter: 'temprature'.", 'temprature', 'unknown_parameter')],
      [{ max_tokens: 50 }, invalid("Unsupported parameter: 'max_tokens'. In the Responses API, this parameter has moved to 'max_output_tokens'.", 'max_tokens', 'unsupported_parameter')],
      [{ max_completion_tokens: 50 }, invalid("Unsupported parameter: 'max_completion_tokens'. In the Responses API, this parameter has moved to 'max_output_tokens'.", 'max_completion_tokens', 'unsupported_parameter')],
      [{ max_output_tokens: 'many' }, invalid("Invalid type for 'max_output_tokens': expected an integer, but got a string instead.", 'max_output_tokens', 'invalid_type')],
      [{ service_tier: 'scale' }, invalid("Invalid value: 'scale'. Supported values are: 'auto', 'default', 'fast', 'flex', and 'priority'.", 'service_tier', 'invalid_value')],
    ];
    for (const [extra, error] of cases) expect(await failure(sdk.responses.create({ model: 'm', input: 'x', ...extra } as any))).toEqual({ status: 400, error });
    const wrong = new OpenAI({ apiKey: 'sk-wrong-0123456789abcdef', baseURL: fake.url, maxRetries: 0 });
    expect(await failure(wrong.responses.create({ model: 'm', input: 'x' }))).toEqual({ status: 401, error: openAiUnauthorized('sk-wrong-0123456789abcdef').error });
    const noKey = await post('/responses', JSON.stringify({ model: 'm', input: 'x' }), null);
    expect({ status: noKey.status, body: await noKey.json() }).toEqual({ status: 401, body: openAiUnauthorized(undefined) });
    const notJson = await post('/responses', '{"model": "m", "input": ');
    expect({ status: notJson.status, message: ((await notJson.json()) as any).error.message }).toEqual({ status: 400, message: expect.stringMatching(/^We could not parse the JSON body of your request\./) });
    expect(fake.requests.length).toBe(cases.length + 3);
  });

  it("takes the Codex CLI's own request (client_metadata, namespace tools, reasoning items without ids) and its reasoning back", async () => {
    const codex = JSON.parse(readFileSync(join(__dirname, 'fixtures/clients/codex-0.171.0.responses.json'), 'utf8'));
    fake.reply.reasoning = { summary: ['Plan.'] };
    fake.reply.toolCalls = [{ id: 'call_exec_2', name: 'exec_command', arguments: '{"cmd":"pwd"}' }];
    const events: any[] = [];
    for await (const e of await sdk.responses.create({ ...codex, model: 'gpt-6.2-sol' } as OpenAI.Responses.ResponseCreateParamsStreaming)) events.push(e);
    const output = events.at(-1).response.output;
    expect(output.map((i: any) => i.type)).toEqual(['reasoning', 'function_call']);
    // Codex sends its history back without the items' ids and statuses (codex-rs/protocol/src/models.rs).
    const history = output.map(({ id: _id, status: _status, ...item }: any) => item);
    fake.reply.toolCalls = undefined;
    const next = await post('/responses', JSON.stringify({ ...codex, model: 'gpt-6.2-sol', stream: false, input: [...codex.input, ...history, { type: 'function_call_output', call_id: 'call_exec_2', output: '/work' }] }));
    expect(next.status).toBe(200);
    expect(fake.requests.map((r) => r.responses && [r.responses.store, r.responses.reasoningIntact])).toEqual([[false, null], [false, true]]);
    expect(fake.requests[1].body.client_metadata).toEqual(codex.client_metadata);
  });

  it("takes Codex 0.171.0's tool loop with its default model: exec called in its namespace, reasoning back with content null", async () => {
    // What Codex sends for gpt-6.2-sol (captured through test/codex-responses.e2e-spec.ts): its tools in an additional_tools
    // item, and on the next step its history with the reasoning item's `content` null (codex-rs/protocol/src/models.rs).
    fake.reply.reasoning = { summary: [] };
    fake.reply.customToolCalls = [{ id: 'call_exec_1', namespace: 'functions', name: 'exec', input: 'text(1)' }];
    const offer = { type: 'additional_tools', id: 'at_1', role: 'developer', tools: [{ type: 'namespace', name: 'functions', description: '', tools: [{ type: 'custom', name: 'exec', description: 'Runs JavaScript.' }] }] };
    const asked = { model: 'gpt-6.2-sol', stream: false, store: false, include: ['reasoning.encrypted_content'], reasoning: { effort: 'low', context: 'all_turns' } };
    const user = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Run it.' }] };
    const first = await post('/responses', JSON.stringify({ ...asked, input: [offer, user] }));
    const { output } = (await first.json()) as { output: any[] };
    expect(output.map((i) => i.type)).toEqual(['reasoning', 'custom_tool_call']);
    expect(output[1]).toEqual({ id: expect.stringMatching(/^ctc_/), type: 'custom_tool_call', call_id: 'call_exec_1', namespace: 'functions', name: 'exec', input: 'text(1)' });
    expect(fake.responses.answered.map((r) => r.output)).toEqual([output]);
    fake.reply.customToolCalls = undefined;
    const history = [{ ...output[0], content: null }, output[1], { type: 'custom_tool_call_output', call_id: 'call_exec_1', output: [{ type: 'input_text', text: '1' }] }];
    const next = await post('/responses', JSON.stringify({ ...asked, input: [offer, user, ...history] }));
    expect(next.status).toBe(200);
    expect(fake.requests[1].responses?.reasoningIntact).toBe(true);
    // Null is what OpenAI takes from Codex; any other content that is no list of reasoning text is still refused.
    const wrong = await post('/responses', JSON.stringify({ ...asked, input: [user, { ...output[0], content: 'thoughts' }] }));
    expect(wrong.status).toBe(400);
    expect(fake.responses.answered).toHaveLength(2);
  });

  it('refuses Responses-only models on chat completions with OpenAI\'s body (404 as observed, 400 when told), serves them on Responses', async () => {
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const body = invalid('This model is only supported in v1/responses and not in v1/chat/completions.', 'model', null);
    for (const model of ['gpt-6.2-sol', 'gpt-5-codex', 'o3-pro-2025-06-10']) expect(await failure(sdk.chat.completions.create({ model, messages }))).toEqual({ status: 404, error: body });
    fake.responses.responsesOnlyStatus = 400;
    expect(await failure(sdk.chat.completions.create({ model: 'o3-pro', messages }))).toEqual({ status: 400, error: body });
    expect((await sdk.chat.completions.create({ model: 'gpt-5', messages })).choices[0].message.content).toBe(TEXT);
    fake.responses.responsesOnlyModels.add('gpt-5');
    expect(await failure(sdk.chat.completions.create({ model: 'gpt-5', messages }))).toEqual({ status: 400, error: body });
    expect((await sdk.responses.create({ model: 'gpt-5', input: 'hi' })).output_text).toBe(TEXT);
  });

  it('fails as told on /v1/responses: a 500, a stream cut after N events, a broken JSON body', async () => {
    fake.failNext('status500');
    expect(await failure(sdk.responses.create({ model: 'm', input: 'x' }))).toMatchObject({ status: 500 });
    // A cut after three events: the stream ends without response.completed. What reaches the reader before the cut
    // is the events' beginning, in order, though not always all three: a client may drop what it had buffered when
    // the connection breaks (undici on Node 22 does, after a clean cut too).
    fake.failNext('truncatedChunked');
    fake.faultAfterEvents = 3;
    const seen: string[] = [];
    let ended = false;
    try {
      for await (const e of await sdk.responses.create({ model: 'm', input: 'x', stream: true })) seen.push(e.type);
      ended = true;
    } catch (e) {
      expect((e as Error).message).toMatch(/terminated|reset|aborted|closed/i);
    }
    expect(ended).toBe(false);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen).toEqual(['response.created', 'response.in_progress', 'response.output_item.added'].slice(0, seen.length));
    expect(fake.requests.at(-1)!.finished).toBe(false);
    fake.failNext('malformedJson');
    expect(await sdk.responses.create({ model: 'm', input: 'x' }).catch((e) => e.name)).toBe('SyntaxError');
  });
});
