import OpenAI, { AzureOpenAI } from 'openai';
import { AZURE_UNAUTHORIZED, FakeAzureOpenAI, filterResults, startFakeAzureOpenAI } from './support/fake-azure-openai';

// The fake Azure OpenAI resource is only useful if the official client accepts what it says.
describe('fake Azure OpenAI (self-check with the openai package\'s AzureOpenAI client)', () => {
  let fake: FakeAzureOpenAI;
  const client = (options: { deployment?: string; apiKey?: string; apiVersion?: string } = {}) =>
    new AzureOpenAI({ endpoint: fake.url, apiKey: options.apiKey ?? fake.apiKey, apiVersion: options.apiVersion ?? '2024-10-21', deployment: options.deployment ?? 'gpt-4o-prod', maxRetries: 0, timeout: 5000 });

  beforeAll(async () => {
    fake = await startFakeAzureOpenAI();
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.resetState());

  it('answers chat JSON at the deployment path with api-version, reading the api-key header, with Azure\'s filter annotations and usage', async () => {
    fake.reply = { content: 'Bonjour tout le monde.', promptTokens: 20, cachedTokens: 8 };
    const completion = await client().chat.completions.create({ model: 'ignored-by-azure', messages: [{ role: 'user', content: 'Say hello in French.' }] });
    expect(completion.choices[0].message.content).toBe('Bonjour tout le monde.');
    expect(completion.choices[0].finish_reason).toBe('stop');
    expect(completion.model).toBe('gpt-4o-2024-08-06');
    expect(completion.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 4, total_tokens: 24, prompt_tokens_details: { cached_tokens: 8 } });
    const extra = completion as unknown as { prompt_filter_results: unknown[]; choices: { content_filter_results: unknown }[] };
    expect(extra.prompt_filter_results).toEqual([{ prompt_index: 0, content_filter_results: filterResults() }]);
    expect(extra.choices[0].content_filter_results).toEqual(filterResults());
    const sent = fake.requests[0];
    expect(sent.path).toBe('/openai/deployments/gpt-4o-prod/chat/completions');
    expect(sent.query.get('api-version')).toBe('2024-10-21');
    expect(sent.headers['api-key']).toBe(fake.apiKey);
    expect(sent.headers.authorization).toBeUndefined();
  });

  it('streams with the prompt-filter chunk first (no choices), content deltas with filter results, and the usage chunk when asked', async () => {
    const stream = await client().chat.completions.create({ model: 'x', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Hi' }] });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0].choices).toEqual([]);
    expect((chunks[0] as unknown as { prompt_filter_results: unknown[] }).prompt_filter_results).toHaveLength(1);
    expect(chunks[0].id).toBe('');
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    expect(text).toBe(fake.reply.content);
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason).toBe('stop');
    const last = chunks[chunks.length - 1];
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ prompt_tokens: 14, completion_tokens: 7 });
  });

  it('streams tool calls, and an answer the output filter cut ends with finish_reason content_filter naming the category', async () => {
    fake.reply = { content: '', promptTokens: 9, toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"city":"Zürich"}' }] };
    const tools = await client().chat.completions.create({ model: 'x', stream: true, messages: [{ role: 'user', content: 'Weather?' }], tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }] });
    let args = '';
    let finish: string | null = null;
    for await (const chunk of tools) {
      args += chunk.choices[0]?.delta?.tool_calls?.[0]?.function?.arguments ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(args).toBe('{"city":"Zürich"}');
    expect(finish).toBe('tool_calls');

    fake.resetState();
    fake.failNext('filteredAnswer');
    const filtered = await client().chat.completions.create({ model: 'x', stream: true, messages: [{ role: 'user', content: 'Tell me.' }] });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of filtered) chunks.push(chunk);
    const end = chunks.find((c) => c.choices[0]?.finish_reason)!;
    expect(end.choices[0].finish_reason).toBe('content_filter');
    expect((end.choices[0] as unknown as { content_filter_results: unknown }).content_filter_results).toMatchObject({ violence: { filtered: true, severity: 'medium' } });
  });

  it('refuses a filtered prompt with 400 content_filter and the innererror categories', async () => {
    fake.failNext('contentFilter');
    fake.filteredCategories = { hate: 'high', violence: 'medium' };
    const err = await client().chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'bad' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const error = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(error.code).toBe('content_filter');
    expect(error.param).toBe('prompt');
    expect((error.error as { innererror: unknown }).innererror).toEqual({
      code: 'ResponsibleAIPolicyViolation',
      content_filter_result: filterResults({ hate: 'high', violence: 'medium' }),
    });
  });

  it('answers 401 with Azure\'s body for a wrong key, 404 DeploymentNotFound for an unknown deployment, 400 for an unknown api-version', async () => {
    const unauthorized = await client({ apiKey: 'wrong' }).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);
    expect(unauthorized).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((unauthorized as InstanceType<typeof OpenAI.APIError>).error).toEqual(AZURE_UNAUTHORIZED.error);

    const missing = await client({ deployment: 'nope' }).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect((missing as InstanceType<typeof OpenAI.APIError>).code).toBe('DeploymentNotFound');

    const version = await client({ apiVersion: '2019-01-01' }).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);
    expect(version).toBeInstanceOf(OpenAI.BadRequestError);
    expect((version as Error).message).toContain('API version not supported');

    // Past Azure's own checks, the body is refused as OpenAI refuses it (../shared/openai-openapi.yaml).
    const unknown = await client().chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hi' }], some_future_field: 1 } as never).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.BadRequestError);
    expect((unknown as InstanceType<typeof OpenAI.APIError>).error).toEqual({ message: 'Unrecognized request argument supplied: some_future_field', type: 'invalid_request_error', param: null, code: null });
    const wrongType = await client().chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 'ten' } as never).catch((e: unknown) => e);
    expect((wrongType as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({ param: 'max_tokens', code: 'invalid_type', message: "Invalid type for 'max_tokens': expected an integer, but got a string instead." });
  });

  it('reports service_tier only when one was asked (priority processing): priority unless downgraded, default for the others', async () => {
    const azure = client({ apiVersion: '2025-10-01-preview' });
    const messages = [{ role: 'user' as const, content: 'Hi' }];
    const served = async (extra: Record<string, unknown>) => ((await azure.chat.completions.create({ model: 'x', messages, ...extra } as never)) as OpenAI.ChatCompletion).service_tier;
    expect(await served({})).toBeUndefined();
    expect([await served({ service_tier: 'priority' }), await served({ service_tier: 'auto' }), await served({ service_tier: 'flex' })]).toEqual(['priority', 'default', 'default']);
    const streamed = async () => {
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      for await (const chunk of await azure.chat.completions.create({ model: 'x', messages, stream: true, service_tier: 'priority' })) chunks.push(chunk);
      // The first chunk is Azure's prompt filter results alone, built apart from the answer's chunks.
      expect(chunks[0].service_tier).toBeUndefined();
      return [...new Set(chunks.slice(1).map((c) => c.service_tier))];
    };
    expect(await streamed()).toEqual(['priority']);
    fake.downgradePriority = true;
    expect(await served({ service_tier: 'priority' })).toBe('default');
    expect(await streamed()).toEqual(['default']);
    expect(fake.requests.map((r) => r.query.get('api-version'))).toEqual(fake.requests.map(() => '2025-10-01-preview'));

    const refused = await azure.chat.completions.create({ model: 'x', messages, service_tier: 'scale' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({ param: 'service_tier', code: 'invalid_value', message: expect.stringContaining("Invalid value: 'scale'.") });
  });

  it('answers 404 Resource not found without api-version, and 429 with retry-after', async () => {
    const noVersion = await fetch(`${fake.url}/openai/deployments/gpt-4o-prod/chat/completions`, {
      method: 'POST',
      headers: { 'api-key': fake.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(noVersion.status).toBe(404);
    expect(await noVersion.json()).toEqual({ error: { code: '404', message: 'Resource not found' } });

    fake.failNext('status429');
    const limited = await client().chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toBe('6');
    expect((limited as Error).message).toContain('exceeded token rate limit');
  });

  it('transcribes a multipart upload and speaks, on deployments of those kinds (and refuses chat on a whisper deployment)', async () => {
    const transcription = await client({ deployment: 'whisper-prod' }).audio.transcriptions.create({
      model: 'whisper',
      file: new File([Buffer.from('RIFF-fake-wav')], 'hello.wav', { type: 'audio/wav' }),
      response_format: 'verbose_json',
    });
    expect(transcription).toMatchObject({ text: 'Hello from Azure.', duration: 2.5 });
    expect(fake.requests[0].path).toBe('/openai/deployments/whisper-prod/audio/transcriptions');
    expect(fake.requests[0].file).toMatchObject({ filename: 'hello.wav', size: 13 });

    const speech = await client({ deployment: 'tts-prod' }).audio.speech.create({ model: 'tts', input: 'Hello.', voice: 'alloy' });
    expect(Buffer.from(await speech.arrayBuffer())).toEqual(fake.speechAudio);
    expect(speech.headers.get('content-type')).toBe('audio/mpeg');

    const wrongKind = await client({ deployment: 'whisper-prod' }).chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);
    expect((wrongKind as InstanceType<typeof OpenAI.APIError>).code).toBe('OperationNotSupported');
  });

  it('cuts a stream after its first events (the client sees an error), and answers 500', async () => {
    fake.failNext('cutStream');
    fake.faultAfterEvents = 3;
    const stream = await client().chat.completions.create({ model: 'x', stream: true, messages: [{ role: 'user', content: 'Hi' }] });
    const read = async () => {
      for await (const _chunk of stream) void _chunk;
    };
    await expect(read()).rejects.toThrow();

    fake.failNext('status500');
    const failed = await client().chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(OpenAI.InternalServerError);
  });
});
