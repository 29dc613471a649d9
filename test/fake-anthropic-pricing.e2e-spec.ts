import Anthropic from '@anthropic-ai/sdk';
import { FakeAnthropic, startFakeAnthropic } from './support/fake-anthropic';
import { FAST_MODE_BETA } from './support/fake-anthropic-request';
import { fakeTokenCount } from './support/fake-tokens';

/**
 * The fake Anthropic reports what changes a request's price as Anthropic does (DESIGN.md section 12.2), proven with
 * @anthropic-ai/sdk: usage.service_tier (https://docs.claude.com/en/api/service-tiers), usage.speed under fast mode's
 * beta (https://platform.claude.com/docs/en/build-with-claude/fast-mode), usage.inference_geo
 * (https://platform.claude.com/docs/en/build-with-claude/data-residency), and the web search server tool with
 * usage.server_tool_use.web_search_requests (https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool).
 */
describe('fake Anthropic upstream: price facts and server tools (self-check with @anthropic-ai/sdk)', () => {
  let fake: FakeAnthropic;
  let sdk: Anthropic;

  beforeAll(async () => {
    fake = await startFakeAnthropic();
    sdk = new Anthropic({ apiKey: null, defaultHeaders: { 'x-api-key': fake.apiKey }, baseURL: fake.url, maxRetries: 0, timeout: 5000 });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.resetState());

  const hello = { model: 'claude-opus-4-6', max_tokens: 100, messages: [{ role: 'user' as const, content: 'Hello' }] };
  const fast = { headers: { 'anthropic-beta': `interleaved-thinking-2025-05-14,${FAST_MODE_BETA}` } };
  /** The JSON answer's usage and the stream's finalMessage() usage, which must agree. */
  async function bothUsages(params: Anthropic.MessageCreateParamsNonStreaming, options?: Anthropic.RequestOptions) {
    const json = await sdk.messages.create(params, options);
    const streamed = await sdk.messages.stream(params, options).finalMessage();
    expect(streamed.usage).toEqual(json.usage);
    // The same blocks, but for the ids of the server tools' calls, each answer's own.
    const blocks = (content: unknown) => JSON.parse(JSON.stringify(content).replace(/srvtoolu_\w+/g, 'srvtoolu_…'));
    expect(blocks(streamed.content)).toEqual(blocks(json.content));
    return json;
  }
  const fails = (params: object, options?: Anthropic.RequestOptions) => sdk.messages.create(params as Anthropic.MessageCreateParamsNonStreaming, options).catch((e: unknown) => e as any);

  it('reports the tier: standard, priority when the account has it, standard when standard_only was asked; JSON and streamed', async () => {
    expect((await bothUsages(hello)).usage).toMatchObject({ service_tier: 'standard', inference_geo: 'not_available' });
    fake.serviceTier = 'priority';
    expect((await bothUsages({ ...hello, service_tier: 'auto' })).usage.service_tier).toBe('priority');
    expect((await bothUsages({ ...hello, service_tier: 'standard_only' })).usage.service_tier).toBe('standard');
    const refused = await fails({ ...hello, service_tier: 'priority' });
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect(refused.error.error).toEqual({ type: 'invalid_request_error', message: "service_tier: Input should be 'auto' or 'standard_only'" });
  });

  it('reports fast mode under its beta, or standard when it was not given (a downgrade); refuses speed without the beta', async () => {
    const ran = await bothUsages({ ...hello, speed: 'fast' }, fast);
    expect(ran.usage).toMatchObject({ speed: 'fast', service_tier: 'standard' });
    expect(fake.requests[0].headers['anthropic-beta']).toContain(FAST_MODE_BETA);
    fake.fastModeDowngrade = true;
    expect((await bothUsages({ ...hello, speed: 'fast' }, fast)).usage.speed).toBe('standard');
    expect((await bothUsages({ ...hello, speed: 'standard' }, fast)).usage.speed).toBe('standard');
    // No speed asked: none reported.
    expect((await sdk.messages.create(hello, fast)).usage).not.toHaveProperty('speed');
    const noBeta = await fails({ ...hello, speed: 'fast' });
    expect(noBeta).toBeInstanceOf(Anthropic.BadRequestError);
    expect(noBeta.error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'speed: Extra inputs are not permitted' }, request_id: expect.stringMatching(/^req_/) });
    expect((await fails({ ...hello, speed: 'turbo' }, fast)).error.error.message).toBe("speed: Input should be 'standard' or 'fast'");
    expect(fake.requests.filter((r) => r.answered)).toHaveLength(7);
  });

  it('reports the geography asked for, on the models that take it; refuses it on older models and unknown regions', async () => {
    expect((await bothUsages({ ...hello, inference_geo: 'us' })).usage.inference_geo).toBe('us');
    expect((await sdk.messages.create({ ...hello, inference_geo: 'global' })).usage.inference_geo).toBe('global');
    fake.defaultInferenceGeo = 'global';
    expect((await sdk.messages.create(hello)).usage.inference_geo).toBe('global');
    expect((await fails({ ...hello, inference_geo: 'eu' })).error.error.message).toBe("inference_geo: Input should be 'global' or 'us'");
    const older = await fails({ ...hello, model: 'claude-haiku-4-5', inference_geo: 'us' });
    expect(older).toBeInstanceOf(Anthropic.BadRequestError);
    expect(older.error.error.message).toMatch(/^inference_geo: not supported by model claude-haiku-4-5/);
  });

  const results = [
    { url: 'https://example.com/gateway', title: 'The gateway ships', page_age: 'April 30, 2026' },
    { url: 'https://example.org/prices', title: 'Prices as the upstream prices them' },
  ];
  const searching = (max_uses?: number): Anthropic.MessageCreateParamsNonStreaming => ({
    ...hello,
    tools: [{ type: 'web_search_20250305', name: 'web_search', ...(max_uses !== undefined && { max_uses }) }],
    messages: [{ role: 'user', content: 'What did the gateway ship?' }],
  });

  it('runs the web search tool: server_tool_use and web_search_tool_result blocks, the searches counted, max_uses kept', async () => {
    fake.webSearch = { queries: ['gateway release', 'gateway prices', 'gateway again'], results };
    fake.reply = { text: 'It ships prices as the upstream prices them.' };
    const answer = await bothUsages(searching(2));
    const types = answer.content.map((b) => b.type);
    expect(types).toEqual(['server_tool_use', 'web_search_tool_result', 'server_tool_use', 'web_search_tool_result', 'server_tool_use', 'web_search_tool_result', 'text']);
    const [use, found] = answer.content as any[];
    expect(use).toMatchObject({ type: 'server_tool_use', id: expect.stringMatching(/^srvtoolu_/), name: 'web_search', input: { query: 'gateway release' }, caller: { type: 'direct' } });
    expect(found.tool_use_id).toBe(use.id);
    expect(found.content).toEqual([
      { type: 'web_search_result', url: results[0].url, title: results[0].title, encrypted_content: expect.any(String), page_age: 'April 30, 2026' },
      { type: 'web_search_result', url: results[1].url, title: results[1].title, encrypted_content: expect.any(String), page_age: null },
    ]);
    // The third search is past max_uses: Anthropic's error, and it is not counted.
    expect((answer.content[5] as any).content).toEqual({ type: 'web_search_tool_result_error', error_code: 'max_uses_exceeded' });
    expect(answer.usage.server_tool_use).toEqual({ web_search_requests: 2, web_fetch_requests: 0 });
    // Search results are input tokens; the searches' calls are output.
    const prompt = FakeAnthropic.countInputTokens(searching(2));
    const resultTokens = fakeTokenCount(JSON.stringify(found.content)) + fakeTokenCount(JSON.stringify((answer.content[3] as any).content));
    expect(answer.usage.input_tokens).toBe(prompt + resultTokens);
    const calls = ['gateway release', 'gateway prices', 'gateway again'].reduce((n, q) => n + fakeTokenCount('web_search') + fakeTokenCount(JSON.stringify({ query: q })), 0);
    expect(answer.usage.output_tokens).toBe(calls + fakeTokenCount(fake.reply.text));
    // Without max_uses, every query runs.
    expect((await sdk.messages.create(searching())).usage.server_tool_use).toEqual({ web_search_requests: 3, web_fetch_requests: 0 });
  });

  it('streams the searches as Anthropic does: the call with its query in input_json_delta, the result whole, the count in message_delta', async () => {
    fake.sseFraming = 'exact';
    fake.webSearch = { queries: ['gateway release'], results };
    const res = await fetch(`${fake.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': fake.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ ...searching(), stream: true }),
    });
    const frames = (await res.text()).split('\n\n').filter(Boolean).map((f) => JSON.parse(f.split('\n')[1].slice(6)));
    const starts = frames.filter((f) => f.type === 'content_block_start').map((f) => f.content_block);
    expect(starts[0]).toEqual({ type: 'server_tool_use', id: expect.stringMatching(/^srvtoolu_/), name: 'web_search', input: {}, caller: { type: 'direct' } });
    const query = frames.filter((f) => f.type === 'content_block_delta' && f.index === 0).map((f) => f.delta.partial_json).join('');
    expect(JSON.parse(query)).toEqual({ query: 'gateway release' });
    expect(starts[1]).toMatchObject({ type: 'web_search_tool_result', tool_use_id: starts[0].id, content: [{ url: results[0].url }, { url: results[1].url }] });
    const [start] = frames;
    const delta = frames.find((f) => f.type === 'message_delta');
    expect(start.message.usage).not.toHaveProperty('server_tool_use');
    expect(start.message.usage).toMatchObject({ service_tier: 'standard', inference_geo: 'not_available' });
    expect(delta.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
    // message_start counts the prompt; message_delta's cumulative input adds the results.
    expect(delta.usage.input_tokens - start.message.usage.input_tokens).toBe(fakeTokenCount(JSON.stringify(starts[1].content)));
  });

  it('offered the tool but not told to search: no search, zero uses; refuses a max_uses Anthropic refuses', async () => {
    const answer = await sdk.messages.create(searching(5));
    expect(answer.content.map((b) => b.type)).toEqual(['text']);
    expect(answer.usage.server_tool_use).toEqual({ web_search_requests: 0, web_fetch_requests: 0 });
    // Steered over HTTP, as when the fake runs as its own process: searches, and the service's tier.
    const control = (path: string, body: unknown) => fetch(`${fake.url}/_fake/${path}`, { method: 'POST', body: JSON.stringify(body) });
    expect((await control('web-search', { queries: ['q'], results })).status).toBe(200);
    expect((await control('service', { serviceTier: 'priority' })).status).toBe(200);
    expect((await sdk.messages.create(searching(5))).usage).toMatchObject({ service_tier: 'priority', server_tool_use: { web_search_requests: 1 } });
    await control('web-search', null);
    expect((await sdk.messages.create(searching(5))).usage.server_tool_use).toEqual({ web_search_requests: 0, web_fetch_requests: 0 });
    expect((await sdk.messages.create(hello)).usage).not.toHaveProperty('server_tool_use');
    const refused = await fails(searching(0));
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect(refused.error.error.message).toBe('tools.0.web_search_20250305.max_uses: Input should be greater than 0');
  });

  it('answers a scripted conversation: replyFor chooses the reply from the body, `reply` otherwise', async () => {
    fake.replyFor = (body) => (JSON.stringify(body.messages).includes('tool_result') ? { text: 'Done.' } : undefined);
    expect((await sdk.messages.create(hello)).content).toEqual([{ type: 'text', text: fake.reply.text }]);
    const turn = { ...hello, messages: [...hello.messages, { role: 'assistant' as const, content: [{ type: 'tool_use' as const, id: 'toolu_1', name: 'f', input: {} }] }, { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: 'toolu_1', content: 'ok' }] }] };
    expect((await sdk.messages.create({ ...turn, tools: [{ name: 'f', input_schema: { type: 'object' } }] })).content).toEqual([{ type: 'text', text: 'Done.' }]);
  });
});
