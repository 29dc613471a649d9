import Anthropic from '@anthropic-ai/sdk';
import { FakeAnthropic, startFakeAnthropic } from './support/fake-anthropic';
import { fakeTokenCount } from './support/fake-tokens';

// The fake Anthropic upstream is only useful if the official client accepts what it says.
describe('fake Anthropic upstream (self-check with @anthropic-ai/sdk)', () => {
  let fake: FakeAnthropic;
  let sdk: Anthropic;

  beforeAll(async () => {
    fake = await startFakeAnthropic();
    sdk = client(fake.apiKey);
  });
  /**
   * @anthropic-ai/sdk 1.x sends its `apiKey` as `Authorization: Bearer`; the API takes an API key in `x-api-key` only
   * (https://docs.anthropic.com/en/api/overview#authentication), so the key goes there and `apiKey` stays null.
   */
  const client = (key: string) => new Anthropic({ apiKey: null, defaultHeaders: { 'x-api-key': key }, baseURL: fake.url, maxRetries: 0, timeout: 5000 });
  afterAll(() => fake.close());
  beforeEach(() => fake.resetState());

  const weather = { name: 'get_weather', description: 'The weather in a city.', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } };
  const toolReply = () => {
    fake.reply = {
      text: 'Thé weather in 狐 city, let me check 🦊.',
      thinking: { thinking: 'The user wants the weather; I should call the tool.', signature: 'EqQBCkYIBxgCKkBsig-fake==' },
      toolUses: [{ id: 'toolu_01Fake', name: 'get_weather', input: { city: 'Zürich', units: ['c', 'f'], nested: { deep: true } } }],
    };
  };
  const toolRequest = {
    model: 'claude-sonnet-4-6',
    max_tokens: 4096,
    thinking: { type: 'enabled' as const, budget_tokens: 1024 },
    tools: [weather],
    messages: [{ role: 'user' as const, content: 'What is the weather in Zürich?' }],
  };

  it('answers messages.create with thinking (signature kept), text and tool_use, and records the request', async () => {
    toolReply();
    const msg = await sdk.messages.create(toolRequest, { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } });
    expect(msg).toMatchObject({ type: 'message', role: 'assistant', model: 'claude-sonnet-4-6', stop_reason: 'tool_use', stop_sequence: null });
    expect(msg.id).toMatch(/^msg_/);
    expect(msg.content).toEqual([
      { type: 'thinking', thinking: fake.reply.thinking!.thinking, signature: 'EqQBCkYIBxgCKkBsig-fake==' },
      { type: 'text', text: fake.reply.text },
      { type: 'tool_use', id: 'toolu_01Fake', name: 'get_weather', input: { city: 'Zürich', units: ['c', 'f'], nested: { deep: true } } },
    ]);
    const output = fakeTokenCount(fake.reply.thinking!.thinking) + fakeTokenCount(fake.reply.text) + fakeTokenCount('get_weather') + fakeTokenCount(JSON.stringify(fake.reply.toolUses![0].input));
    expect(msg.usage).toEqual({
      input_tokens: FakeAnthropic.countInputTokens(toolRequest),
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      output_tokens: output,
      service_tier: 'standard',
      inference_geo: 'not_available',
    });
    const [seen] = fake.requests;
    expect(seen).toMatchObject({ method: 'POST', path: '/v1/messages', body: toolRequest });
    expect(seen.headers).toMatchObject({ 'x-api-key': fake.apiKey, 'anthropic-version': '2026-10-21', 'anthropic-beta': 'interleaved-thinking-2025-05-14' });
    expect(seen.headers.authorization).toBeUndefined();
    expect(JSON.parse(seen.rawBody)).toEqual(toolRequest);
    expect(seen.answered?.usage).toEqual(msg.usage);
  });

  it('streams what the JSON answer says: finalMessage() has the same content and usage', async () => {
    toolReply();
    const json = await sdk.messages.create(toolRequest);
    const stream = sdk.messages.stream(toolRequest);
    const types: string[] = [];
    const pieces: string[] = [];
    stream.on('streamEvent', (event) => {
      types.push(event.type === 'content_block_delta' ? event.delta.type : event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'input_json_delta') pieces.push(event.delta.partial_json);
    });
    const final = await stream.finalMessage();
    expect(final.content).toEqual(json.content);
    expect(final.usage).toEqual(json.usage);
    expect(final).toMatchObject({ stop_reason: 'tool_use', stop_sequence: null, model: 'claude-sonnet-4-6' });
    // thinking deltas then one signature delta; the tool's input in several pieces, the first one empty.
    expect(types[0]).toBe('message_start');
    expect(types.slice(1, 3)).toEqual(['content_block_start', 'thinking_delta']);
    expect(types.filter((t) => t === 'signature_delta')).toHaveLength(1);
    expect(types.indexOf('signature_delta')).toBeLessThan(types.indexOf('text_delta'));
    expect(pieces[0]).toBe('');
    expect(pieces.length).toBeGreaterThan(2);
    expect(pieces.join('')).toBe(JSON.stringify(json.content[2].type === 'tool_use' && json.content[2].input));
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
  });

  it('sends Anthropic event lines, a ping, and usage in message_start and message_delta', async () => {
    fake.sseFraming = 'exact';
    fake.reply = { text: 'one two three' };
    const res = await fetch(`${fake.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': fake.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'count' }] }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    const frames = (await res.text()).split('\n\n').filter(Boolean).map((f) => {
      const [event, data] = f.split('\n');
      expect(event.startsWith('event: ') && data.startsWith('data: ')).toBe(true);
      const parsed = JSON.parse(data.slice(6));
      expect(parsed.type).toBe(event.slice(7));
      return parsed;
    });
    expect(frames.map((f) => f.type)).toEqual(['message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(frames[0].message).toMatchObject({ content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 } });
    expect(frames[3].delta.text + frames[4].delta.text).toBe('one two three');
    expect(frames[6]).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { input_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 3 },
    });
  });

  it('cuts the answer at max_tokens and at a stop sequence, JSON and streamed alike', async () => {
    fake.reply = { text: 'one two three four five' };
    const base = { model: 'claude-haiku-4-5', messages: [{ role: 'user' as const, content: 'count' }] };
    const cut = await sdk.messages.create({ ...base, max_tokens: 3 });
    expect(cut).toMatchObject({ content: [{ type: 'text', text: 'one two three' }], stop_reason: 'max_tokens', usage: { output_tokens: 3 } });
    const streamed = await sdk.messages.stream({ ...base, max_tokens: 3 }).finalMessage();
    expect(streamed).toMatchObject({ content: cut.content, stop_reason: 'max_tokens', usage: cut.usage });
    const stopped = await sdk.messages.create({ ...base, max_tokens: 100, stop_sequences: ['four', 'three'] });
    expect(stopped).toMatchObject({ content: [{ type: 'text', text: 'one two ' }], stop_reason: 'stop_sequence', stop_sequence: 'three', usage: { output_tokens: 2 } });
    expect((await sdk.messages.stream({ ...base, max_tokens: 100, stop_sequences: ['three'] }).finalMessage()).stop_sequence).toBe('three');
  });

  it('computes cache writes per ttl from the breakpoints, reads them on repeat, and looks back to a moved breakpoint', async () => {
    const system = 'You are a careful assistant. Answer briefly, in plain words, and cite nothing.';
    const question = 'What is the capital of France?';
    const first = {
      model: 'claude-sonnet-4-6',
      max_tokens: 200,
      system: [{ type: 'text' as const, text: system, cache_control: { type: 'ephemeral' as const, ttl: '1h' as const } }],
      messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: question, cache_control: { type: 'ephemeral' as const } }] }],
    };
    const [s, q] = [fakeTokenCount(system), fakeTokenCount(question)];
    const written = await sdk.messages.create(first);
    expect(written.usage).toMatchObject({ input_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: s + q, cache_creation: { ephemeral_1h_input_tokens: s, ephemeral_5m_input_tokens: q } });
    const read = await sdk.messages.stream(first).finalMessage();
    expect(read.usage).toMatchObject({ input_tokens: 0, cache_read_input_tokens: s + q, cache_creation_input_tokens: 0, cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: 0 } });

    // The next turn moves the 5m breakpoint to the new last message: the old prefix is found by the lookback.
    const answer = 'Paris.';
    const next = 'And of Italy?';
    const second = {
      ...first,
      messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: question }] }, { role: 'assistant' as const, content: answer }, { role: 'user' as const, content: [{ type: 'text' as const, text: next, cache_control: { type: 'ephemeral' as const } }] }, { role: 'user' as const, content: 'Briefly.' }],
    };
    const turn = await sdk.messages.create(second);
    const tail = fakeTokenCount(answer) + fakeTokenCount(next);
    expect(turn.usage).toMatchObject({ cache_read_input_tokens: s + q, cache_creation_input_tokens: tail, cache_creation: { ephemeral_5m_input_tokens: tail, ephemeral_1h_input_tokens: 0 }, input_tokens: fakeTokenCount('Briefly.') });

    // Entries expire: past five minutes only the 1h system prefix is read; the model is part of the key.
    const later = Date.now() + 6 * 60_000;
    fake.now = () => later;
    expect((await sdk.messages.create(first)).usage).toMatchObject({ cache_read_input_tokens: s, cache_creation: { ephemeral_5m_input_tokens: q, ephemeral_1h_input_tokens: 0 } });
    expect((await sdk.messages.create({ ...first, model: 'claude-haiku-4-5' })).usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: s + q });

    // count_tokens: all the input, cache included, and it does not touch the cache.
    const counted = await sdk.messages.countTokens({ model: 'claude-sonnet-4-6', system: first.system, messages: second.messages });
    expect(counted).toEqual({ input_tokens: turn.usage.input_tokens + turn.usage.cache_read_input_tokens! + turn.usage.cache_creation_input_tokens! });
    expect(fake.requests.at(-1)).toMatchObject({ path: '/v1/messages/count_tokens' });
  });

  it("refuses what Anthropic refuses, in Anthropic's error body, as the SDK's error classes", async () => {
    const ask = (body: any, client = sdk) => client.messages.create(body).catch((e: unknown) => e);
    const ok = { model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    const mark = { type: 'ephemeral' };

    const noMax = await ask({ model: ok.model, messages: ok.messages });
    expect(noMax).toBeInstanceOf(Anthropic.BadRequestError);
    expect(noMax).toMatchObject({ status: 400, type: 'invalid_request_error', error: { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } } });
    expect((noMax as any).requestID).toBe((noMax as any).error.request_id);
    expect(await ask({ ...ok, model: undefined })).toMatchObject({ status: 400, error: { error: { message: 'model: Field required' } } });
    expect(await ask({ ...ok, messages: [] })).toMatchObject({ status: 400, error: { error: { message: 'messages: at least one message is required' } } });
    expect(await ask({ ...ok, messages: [{ role: 'user', content: '' }] })).toMatchObject({ status: 400 });
    const unknown = await ask({ ...ok, model: 'claude-nonexistent' });
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect(unknown).toMatchObject({ type: 'not_found_error', error: { error: { message: 'model: claude-nonexistent' } } });
    const five = Array.from({ length: 5 }, (_, i) => ({ type: 'text', text: `part ${i}`, cache_control: mark }));
    expect(await ask({ ...ok, messages: [{ role: 'user', content: five }] })).toMatchObject({ status: 400, error: { error: { message: 'A maximum of 4 blocks with cache_control may be provided. Found 5.' } } });
    const shortThenLong = { ...ok, system: [{ type: 'text', text: 'sys', cache_control: mark }], messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: '1h' } }] }] };
    expect(await ask(shortThenLong)).toMatchObject({ status: 400, type: 'invalid_request_error' });
    const unanswered = { ...ok, tools: [weather], messages: [{ role: 'user', content: 'w?' }, { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} }] }, { role: 'user', content: 'and?' }] };
    expect(await ask(unanswered)).toMatchObject({ status: 400, error: { error: { message: expect.stringContaining('`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1') } } });
    // Consecutive turns of one role and a final assistant prefill are accepted, as Anthropic accepts them.
    expect(await ask({ ...ok, messages: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }, { role: 'assistant', content: 'The answer is' }] })).toMatchObject({ type: 'message' });

    const wrongKey = await ask(ok, client('sk-ant-wrong'));
    expect(wrongKey).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(wrongKey).toMatchObject({ status: 401, type: 'authentication_error' });
    const noVersion = await fetch(`${fake.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': fake.apiKey }, body: JSON.stringify(ok) });
    expect(noVersion.status).toBe(400);
    expect(await noVersion.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' }, request_id: expect.stringMatching(/^req_/) });
    expect(fake.requests.filter((r) => r.answered)).toHaveLength(1);
  });

  it("refuses what Anthropic refuses, as the SDK maps it: an extra input, a key as a bearer token, a wrong key, an unknown anthropic-version", async () => {
    const ok = { model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }] };
    const extra = await sdk.messages.create({ ...ok, some_future_field: true } as Anthropic.MessageCreateParamsNonStreaming).catch((e: unknown) => e as any);
    expect(extra).toBeInstanceOf(Anthropic.BadRequestError);
    expect(extra.error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'some_future_field: Extra inputs are not permitted' }, request_id: expect.stringMatching(/^req_/) });
    const countExtra = await sdk.messages.countTokens({ ...ok, max_tokens: 10 } as Anthropic.MessageCountTokensParams).catch((e: unknown) => e as any);
    expect(countExtra).toMatchObject({ status: 400, error: { error: { message: 'max_tokens: Extra inputs are not permitted' } } });

    const bearer = await new Anthropic({ apiKey: fake.apiKey, baseURL: fake.url, maxRetries: 0 }).messages.create(ok).catch((e: unknown) => e as any);
    expect(bearer).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(bearer.error.error).toEqual({ type: 'authentication_error', message: 'OAuth authentication is currently not supported.' });
    const wrong = await client('sk-ant-wrong').messages.create(ok).catch((e: unknown) => e as any);
    expect(wrong).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(wrong.error.error).toEqual({ type: 'authentication_error', message: 'invalid x-api-key' });

    const future = await sdk.messages.create(ok, { headers: { 'anthropic-version': '2024-10-22' } }).catch((e: unknown) => e as any);
    expect(future).toBeInstanceOf(Anthropic.BadRequestError);
    expect(future.error.error).toEqual({ type: 'invalid_request_error', message: 'anthropic-version: "2024-10-22" is not a valid version' });
    expect(await sdk.messages.create(ok, { headers: { 'anthropic-version': '2023-01-01' } })).toMatchObject({ type: 'message' });
    expect(fake.requests.filter((r) => r.answered)).toHaveLength(1);
  });

  it('fails as told: 400, 401, 429 with retry-after, 500 and 529, each as the SDK maps it, then answers again', async () => {
    const ok = { model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }] };
    const send = () => sdk.messages.create(ok).catch((e: unknown) => e as any);
    fake.failureMessage = 'prompt is too long: 210000 tokens > 200000 maximum';
    fake.retryAfterS = 7;
    for (const mode of ['status400', 'status401', 'status429', 'status500', 'status529'] as const) fake.failNext(mode);
    const expected = [
      [Anthropic.BadRequestError, 400, 'invalid_request_error'],
      [Anthropic.AuthenticationError, 401, 'authentication_error'],
      [Anthropic.RateLimitError, 429, 'rate_limit_error'],
      [Anthropic.InternalServerError, 500, 'api_error'],
      [Anthropic.OverloadedError, 529, 'overloaded_error'],
    ] as const;
    for (const [cls, status, type] of expected) {
      const err = await send();
      expect(err).toBeInstanceOf(cls);
      expect(err).toMatchObject({ status, type, error: { type: 'error', error: { type } } });
      expect(err.requestID).toMatch(/^req_/);
      expect(err.requestID).toBe(err.error.request_id);
      if (status === 400) expect(err.error.error.message).toBe('prompt is too long: 210000 tokens > 200000 maximum');
      if (status === 429) expect(err.headers.get('retry-after')).toBe('7');
      if (status === 529) expect(err).toBeInstanceOf(Anthropic.InternalServerError);
    }
    expect(await send()).toMatchObject({ type: 'message' });
  });

  it('cuts a stream mid-way (the SDK throws), and sends an error event in-stream (the SDK throws an APIError)', async () => {
    fake.reply = { text: 'a b c d e f g h i j k l' };
    const req = { model: 'claude-haiku-4-5', max_tokens: 100, messages: [{ role: 'user' as const, content: 'x' }] };

    fake.failNext('cutStream');
    const seen: string[] = [];
    const cut = await (async () => {
      for await (const event of await sdk.messages.create({ ...req, stream: true })) seen.push(event.type);
    })().catch((e) => e);
    expect(cut).toMatchObject({ message: expect.any(String) });
    expect(seen[0]).toBe('message_start');
    expect(seen).not.toContain('message_stop');
    fake.failNext('cutStream');
    await expect(sdk.messages.stream(req).finalMessage()).rejects.toMatchObject({ message: expect.any(String) });

    fake.failNext('errorEvent');
    const streamed = await sdk.messages.stream(req).finalMessage().catch((e) => e);
    expect(streamed).toBeInstanceOf(Anthropic.APIError);
    expect(streamed).toMatchObject({ type: 'overloaded_error', error: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
    fake.failNext('errorEvent');
    expect(await sdk.messages.create(req).catch((e) => e)).toBeInstanceOf(Anthropic.OverloadedError);
    expect(fake.aborted()).toHaveLength(0);
  });

  it('waits before the first byte when told, and records a client that gives up', async () => {
    fake.responseDelayMs = 300;
    const started = Date.now();
    await sdk.messages.countTokens({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'one two' }] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    const err = await sdk.messages.create({ model: 'claude-haiku-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, { timeout: 100 }).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIConnectionTimeoutError);
    await fake.waitFor(() => fake.aborted().length === 1);
  });
});
