import OpenAI, { toFile } from 'openai';
import { expectValidAgainst } from './support/openapi';
import { FAKE_OPENAI_KEY, FakeUpstream, startFakeUpstream, unusedPortUrl } from './support/fake-upstream';

// The fake upstream is only useful if a real OpenAI client accepts what it says.
describe('fake upstream (self-check with the openai SDK)', () => {
  let fake: FakeUpstream;
  let sdk: OpenAI;

  beforeAll(async () => {
    fake = await startFakeUpstream();
    sdk = new OpenAI({ apiKey: fake.apiKey, baseURL: fake.url, maxRetries: 0, timeout: 2000 });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.resetState());

  it('answers a chat completion with the configured reply and usage, truncated by max_tokens', async () => {
    fake.reply = { content: 'one two three four', promptTokens: 7, completionTokens: 4 };
    const full = await sdk.chat.completions.create({ model: 'm-1', messages: [{ role: 'user', content: 'hi' }], temperature: 0.3 });
    expectValidAgainst('CreateChatCompletionResponse', full);
    expect(full).toMatchObject({ model: 'm-1', choices: [{ message: { content: 'one two three four' }, finish_reason: 'stop' }] });
    expect(full.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 4, total_tokens: 11 });
    const cut = await sdk.chat.completions.create({ model: 'm-1', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    expect(cut).toMatchObject({ choices: [{ message: { content: 'one two' }, finish_reason: 'length' }], usage: { completion_tokens: 2 } });
    expect(fake.requests.map((r) => r.body.temperature)).toEqual([0.3, undefined]);
    expect(fake.requests[0].headers.authorization).toBe(`Bearer ${FAKE_OPENAI_KEY}`);
  });

  it('streams word by word, with the usage chunk only when asked', async () => {
    fake.reply = { content: 'alpha beta gamma', promptTokens: 3, completionTokens: 3 };
    const chunks: any[] = [];
    const stream = await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: { include_usage: true } });
    for await (const c of stream) chunks.push(c);
    chunks.forEach((c) => expectValidAgainst('CreateChatCompletionStreamResponse', c));
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? null).join('|')).toBe('|alpha| beta| gamma||');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 3 } });

    const plain: any[] = [];
    for await (const c of await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true })) plain.push(c);
    expect(plain.some((c) => c.usage)).toBe(false);
    expect(plain.at(-1).choices[0].finish_reason).toBe('stop');
  });

  it("reports usage details as OpenAI does, in JSON answers and in the usage chunk, inconsistent ones as told, or no usage at all", async () => {
    fake.reply = { content: 'a b c', promptTokens: 2000, completionTokens: 3, usageDetails: { prompt: { cached_tokens: 1536, cache_write_tokens: 64 }, completion: { reasoning_tokens: 2 } } };
    const openAiShaped = {
      prompt_tokens: 2000,
      completion_tokens: 3,
      total_tokens: 2003,
      prompt_tokens_details: { cached_tokens: 1536, audio_tokens: 0, cache_write_tokens: 64 },
      completion_tokens_details: { reasoning_tokens: 2, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    };
    const json = await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expectValidAgainst('CreateChatCompletionResponse', json);
    expect(json.usage).toEqual(openAiShaped);
    const chunks: any[] = [];
    for await (const c of await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: { include_usage: true } })) chunks.push(c);
    expect(chunks.at(-1).usage).toEqual(openAiShaped);

    fake.reply.usageDetails = { prompt: { cached_tokens: '9000', audio_tokens: undefined }, completion: { audio_tokens: -4 } };
    const odd = await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expect(odd.usage).toMatchObject({ prompt_tokens_details: { cached_tokens: '9000' }, completion_tokens_details: { audio_tokens: -4 } });
    expect('audio_tokens' in (odd.usage as any).prompt_tokens_details).toBe(false);

    fake.reply.omitUsage = true;
    expect((await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })).usage).toBeUndefined();
    const bare: any[] = [];
    for await (const c of await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: { include_usage: true } })) bare.push(c);
    expect(bare.some((c) => 'usage' in c)).toBe(false);
  });

  it('fails as told, for the next N requests only', async () => {
    fake.failNext('status4xx');
    fake.failNext('status500');
    fake.failNext('malformedJson');
    fake.failNext('reset');
    const send = () => sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(await send()).toMatchObject({ status: 400, message: expect.stringContaining('rejected this request') });
    expect(await send()).toMatchObject({ status: 500 });
    expect(await send()).toMatchObject({ name: 'SyntaxError' });
    expect(await send()).toBeInstanceOf(OpenAI.APIConnectionError);
    expect((await send()).choices[0].message.content).toBe(FakeUpstream.defaultReply().content);
    expect(fake.aborted()).toHaveLength(0);
  });

  it('records a client that gives up on a hung request, and one that leaves a slow stream', async () => {
    fake.failNext('hang');
    const err = await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, { timeout: 200 }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIConnectionError);
    await fake.waitFor(() => fake.aborted().length === 1);

    fake.chunkDelayMs = 100;
    fake.reply = { content: 'a b c d e f g h', promptTokens: 1, completionTokens: 8 };
    const stream = await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true });
    for await (const _ of stream) {
      stream.controller.abort();
      break;
    }
    await fake.waitFor(() => fake.aborted().length === 2);
    expect(fake.requests[1].finished).toBe(false);
  });

  it('breaks a stream midway', async () => {
    fake.failNext('midStreamFailure');
    fake.reply = { content: 'a b c d e f', promptTokens: 1, completionTokens: 6 };
    const seen: string[] = [];
    const err = await (async () => {
      for await (const c of await sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true })) {
        seen.push(c.choices[0]?.delta.content ?? '');
      }
    })().catch((e) => e);
    expect(err).toMatchObject({ message: expect.any(String) });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.length).toBeLessThan(8);
    expect(fake.aborted()).toHaveLength(0);
  });

  it('transcribes multipart uploads in verbose_json and records the fields', async () => {
    const res = await sdk.audio.transcriptions.create({
      file: await toFile(Buffer.from('RIFF....WAVEfmt '), 'a.wav', { type: 'audio/wav' }),
      model: 'whisper-1',
      response_format: 'verbose_json',
    });
    expect(res).toMatchObject({ text: 'Hello world.', language: 'english', duration: 1.5 });
    expect(fake.requests[0].fields).toMatchObject({ model: 'whisper-1', response_format: 'verbose_json' });
    expect(fake.requests[0].file).toEqual({ filename: 'a.wav', type: 'audio/wav', size: 16 });
  });

  it('streams speech audio with the content type of the format', async () => {
    const res = await sdk.audio.speech.create({ model: 'tts-1', input: 'hi', voice: 'alloy', response_format: 'flac' });
    expect(res.headers.get('content-type')).toBe('audio/flac');
    expect(Buffer.from(await res.arrayBuffer()).equals(fake.speechAudio)).toBe(true);
  });

  it("refuses what OpenAI refuses, in OpenAI's error body, as the SDK maps it: an unknown argument, a wrong type, a missing field, a wrong or missing key", async () => {
    const ask = (body: Record<string, unknown>, client = sdk) => client.chat.completions.create(body as any).catch((e: unknown) => e as any);
    const messages = [{ role: 'user', content: 'hi' }];
    const unknown = await ask({ model: 'gpt-4o', messages, some_future_field: true });
    expect(unknown).toBeInstanceOf(OpenAI.BadRequestError);
    expect(unknown.error).toEqual({ message: 'Unrecognized request argument supplied: some_future_field', type: 'invalid_request_error', param: null, code: null });
    const wrongType = await ask({ model: 'gpt-4o', messages, temperature: 'warm' });
    expect(wrongType).toBeInstanceOf(OpenAI.BadRequestError);
    expect(wrongType.error).toEqual({ message: "Invalid type for 'temperature': expected a decimal, but got a string instead.", type: 'invalid_request_error', param: 'temperature', code: 'invalid_type' });
    expect(await ask({ model: 'gpt-4o', messages: [{ role: 'user', content: 5 }] })).toMatchObject({ status: 400, error: { param: 'messages[0].content', code: 'invalid_type' } });
    expect(await ask({ model: 'gpt-4o' })).toMatchObject({ status: 400, error: { message: "Missing required parameter: 'messages'.", param: 'messages', code: 'missing_required_parameter' } });
    const speech = await sdk.audio.speech.create({ model: 'tts-1', input: 'hi', voice: 'alloy', pitch: 2 } as any).catch((e: unknown) => e as any);
    expect(speech).toMatchObject({ status: 400, error: { message: 'Unrecognized request argument supplied: pitch' } });

    const wrongKey = await ask({ model: 'gpt-4o', messages }, new OpenAI({ apiKey: 'sk-wrong-key-0123456789', baseURL: fake.url, maxRetries: 0 }));
    expect(wrongKey).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(wrongKey.error).toMatchObject({ message: 'Incorrect API key provided: sk-wrong***********6789. You can find your API key at https://platform.openai.com/account/api-keys.', code: 'invalid_api_key' });
    const noKey = await fetch(`${fake.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o', messages }) });
    expect(noKey.status).toBe(401);
    expect(((await noKey.json()) as { error: { message: string } }).error.message).toMatch(/^You didn't provide an API key/);
    expect(fake.requests).toHaveLength(7);
  });

  it('reports the tier that served it in the completion and in every chunk: priority for priority or fast, flex, else default', async () => {
    const messages = [{ role: 'user' as const, content: 'x' }];
    const served = async (service_tier?: string | null) => {
      const json = await sdk.chat.completions.create({ model: 'm', messages, ...(service_tier !== undefined && { service_tier }) } as never);
      expectValidAgainst('CreateChatCompletionResponse', json);
      return (json as OpenAI.ChatCompletion).service_tier;
    };
    const streamed = async (service_tier: string) => {
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      for await (const c of await sdk.chat.completions.create({ model: 'm', messages, stream: true, stream_options: { include_usage: true }, service_tier } as never) as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) chunks.push(c);
      chunks.forEach((c) => expectValidAgainst('CreateChatCompletionStreamResponse', c));
      expect(chunks.length).toBeGreaterThan(3);
      return [...new Set(chunks.map((c) => c.service_tier))];
    };
    const asked = ['priority', 'fast', 'flex', 'auto', 'default', null, undefined];
    const answers: unknown[] = [];
    for (const tier of asked) answers.push(await served(tier));
    expect(answers).toEqual(['priority', 'priority', 'flex', 'default', 'default', 'default', 'default']);
    expect(await streamed('fast')).toEqual(['priority']);
    expect(await streamed('flex')).toEqual(['flex']);
    expect(fake.requests.slice(0, asked.length).map((r) => r.body.service_tier)).toEqual(asked);
  });

  it('downgrades priority to default when told (priority capacity short), through the field or the control route', async () => {
    const messages = [{ role: 'user' as const, content: 'x' }];
    const served = async (service_tier: string) => ((await sdk.chat.completions.create({ model: 'm', messages, service_tier } as never)) as OpenAI.ChatCompletion).service_tier;
    fake.downgradePriority = true;
    expect([await served('priority'), await served('fast'), await served('flex')]).toEqual(['default', 'default', 'flex']);
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of await sdk.chat.completions.create({ model: 'm', messages, stream: true, service_tier: 'priority' })) chunks.push(c);
    expect(chunks.map((c) => c.service_tier)).toEqual(chunks.map(() => 'default'));
    fake.resetState();
    expect(await served('priority')).toBe('priority');
    const control = (on: boolean) => fetch(`${fake.url.replace(/\/v1$/, '')}/_fake/downgrade-priority`, { method: 'POST', body: JSON.stringify({ on }) });
    expect((await control(true)).status).toBe(200);
    expect(await served('priority')).toBe('default');
    await control(false);
    expect(await served('priority')).toBe('priority');
  });

  it("refuses a service_tier OpenAI does not take, its schema's `scale` included, with OpenAI's invalid_value body", async () => {
    const ask = (service_tier: unknown) => sdk.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], service_tier } as never).catch((e: unknown) => e as any);
    for (const tier of ['scale', 'turbo', 'Priority', 'standard']) {
      const err = await ask(tier);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.error).toEqual({ message: `Invalid value: '${tier}'. Supported values are: 'auto', 'default', 'fast', 'flex', and 'priority'.`, type: 'invalid_request_error', param: 'service_tier', code: 'invalid_value' });
    }
    expect(await ask(2)).toMatchObject({ status: 400, error: { param: 'service_tier', code: 'invalid_type' } });
    expect(fake.requests).toHaveLength(5);
  });

  it('gives a URL where connections are refused', async () => {
    const refused = new OpenAI({ apiKey: 'x', baseURL: await unusedPortUrl(), maxRetries: 0 });
    const err = await refused.models.list().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIConnectionError);
  });
});
