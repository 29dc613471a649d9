import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, ConverseStreamOutput, ServiceTierType } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { CatalogEntry } from '../src/config/gateway-config.schema';
import type { BedrockProviderConfig } from '../src/providers/bedrock/bedrock.config';
import { BedrockProvider } from '../src/providers/bedrock/bedrock.provider';
import { ChatChunk, PRICE_FACTS } from '../src/providers/chat-contract';
import type { ChatRequestBody } from '../src/providers/upstream-provider';
import { fakeTokenCount } from './support/fake-tokens';
import { FakeBedrock } from './support/fake-bedrock';

/**
 * The fake Bedrock runtime proven with AWS's own SDK (@aws-sdk/client-bedrock-runtime): its SigV4 checks accept the
 * SDK's signatures and refuse a wrong secret, its JSON and event-stream answers decode into the SDK's types, and
 * its errors and exception events reach the SDK as the named exceptions.
 */
const MODEL = 'anthropic.claude-sonnet-4-5-20250929-v1:0';

describe('FakeBedrock (with the official AWS SDK)', () => {
  let fake: FakeBedrock;

  const client = (secret = fake.secretAccessKey, accessKeyId = fake.accessKeyId) =>
    // HTTP/1.1, as the gateway sends it: this client's default handler speaks HTTP/2 (for bidirectional streams),
    // which the fake does not.
    new BedrockRuntimeClient({ region: fake.region, endpoint: fake.url, maxAttempts: 1, credentials: { accessKeyId, secretAccessKey: secret }, requestHandler: new NodeHttpHandler() });

  async function collect(stream: AsyncIterable<ConverseStreamOutput> | undefined): Promise<ConverseStreamOutput[]> {
    const events: ConverseStreamOutput[] = [];
    for await (const event of stream ?? []) events.push(event);
    return events;
  }

  beforeAll(async () => {
    fake = await new FakeBedrock().start();
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.resetState());

  it('answers Converse to a signed request, with usage counted from the request', async () => {
    const answer = await client().send(
      new ConverseCommand({ modelId: MODEL, system: [{ text: 'Be brief.' }], messages: [{ role: 'user', content: [{ text: 'Hello there, model!' }] }], inferenceConfig: { maxTokens: 100 } }),
    );
    const sent = fake.requests[0];
    expect(sent.path).toBe('/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse');
    expect(sent.modelId).toBe(MODEL);
    expect(sent.signatureValid).toBe(true);
    expect(sent.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAFAKEBEDROCK00001\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
    expect(answer.output?.message?.content).toEqual([{ text: FakeBedrock.defaultReply().text }]);
    expect(answer.stopReason).toBe('end_turn');
    const input = fakeTokenCount('Be brief.') + fakeTokenCount('Hello there, model!');
    expect(answer.usage).toMatchObject({ inputTokens: input, outputTokens: fakeTokenCount(FakeBedrock.defaultReply().text), cacheReadInputTokens: 0, cacheWriteInputTokens: 0 });
    expect(answer.$metadata.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('streams ConverseStream as event-stream frames the SDK decodes: text, reasoning, tool use, stop and metadata', async () => {
    fake.reply = { text: 'Let me look that up.', reasoning: { text: 'The user wants weather.', signature: 'sig-1' }, toolUses: [{ toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Paris' } }] };
    const tools = [{ toolSpec: { name: 'get_weather', description: 'Weather', inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } } } } } }];
    const output = await client().send(new ConverseStreamCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Weather in Paris?' }] }], toolConfig: { tools, toolChoice: { auto: {} } } }));
    expect(fake.requests[0].headers['content-type']).toBe('application/json');
    const events = await collect(output.stream);
    expect(events[0]).toEqual({ messageStart: { role: 'assistant' } });
    const text = events.map((e) => e.contentBlockDelta?.delta?.text ?? '').join('');
    const reasoning = events.map((e) => e.contentBlockDelta?.delta?.reasoningContent?.text ?? '').join('');
    const input = events.map((e) => e.contentBlockDelta?.delta?.toolUse?.input ?? '').join('');
    expect(text).toBe('Let me look that up.');
    expect(reasoning).toBe('The user wants weather.');
    expect(events.find((e) => e.contentBlockStart)).toEqual({ contentBlockStart: { contentBlockIndex: 2, start: { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather' } } } });
    expect(JSON.parse(input)).toEqual({ city: 'Paris' });
    expect(events.at(-2)).toEqual({ messageStop: { stopReason: 'tool_use' } });
    expect(events.at(-1)?.metadata?.usage).toEqual(fake.requests[0].answered!.usage);
  });

  it('caches the prompt up to each cachePoint: a write, then a read', async () => {
    const request = () =>
      new ConverseCommand({
        modelId: MODEL,
        system: [{ text: 'You are a careful assistant. '.repeat(20) }, { cachePoint: { type: 'default' } }],
        messages: [{ role: 'user', content: [{ text: 'Say hi.' }] }],
      });
    const first = await client().send(request());
    const system = fakeTokenCount('You are a careful assistant. '.repeat(20));
    expect(first.usage).toMatchObject({ inputTokens: fakeTokenCount('Say hi.'), cacheWriteInputTokens: system, cacheReadInputTokens: 0 });
    const second = await client().send(request());
    expect(second.usage).toMatchObject({ inputTokens: fakeTokenCount('Say hi.'), cacheWriteInputTokens: 0, cacheReadInputTokens: system });
  });

  it('serves the serviceTier asked and reports it in the Converse answer and the stream\'s metadata event (default when none was asked)', async () => {
    const messages = [{ role: 'user' as const, content: [{ text: 'Hi' }] }];
    const converse = async (type?: ServiceTierType) => (await client().send(new ConverseCommand({ modelId: MODEL, messages, ...(type && { serviceTier: { type } }) }))).serviceTier;
    expect([await converse(), await converse('priority'), await converse('flex'), await converse('default')]).toEqual([{ type: 'default' }, { type: 'priority' }, { type: 'flex' }, { type: 'default' }]);
    expect(fake.requests.map((r) => r.body.serviceTier)).toEqual([undefined, { type: 'priority' }, { type: 'flex' }, { type: 'default' }]);
    const output = await client().send(new ConverseStreamCommand({ modelId: MODEL, messages, serviceTier: { type: 'priority' } }));
    const events = await collect(output.stream);
    expect(events.at(-1)?.metadata?.serviceTier).toEqual({ type: 'priority' });
    expect(events.filter((e) => 'serviceTier' in (Object.values(e)[0] ?? {}))).toHaveLength(1);
  });

  it('refuses a serviceTier Bedrock does not take with a ValidationException naming serviceTier.type', async () => {
    const send = (serviceTier: unknown) =>
      client()
        .send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi' }] }], serviceTier: serviceTier as never }))
        .catch((e) => e);
    const turbo = await send({ type: 'turbo' });
    expect(turbo).toMatchObject({ name: 'ValidationException', $metadata: { httpStatusCode: 400 } });
    expect(turbo.message).toBe("1 validation error detected: Value 'turbo' at 'serviceTier.type' failed to satisfy constraint: Member must satisfy enum value set: [priority, default, flex, reserved]");
    const missing = await send({});
    expect(missing.message).toBe("1 validation error detected: Value null at 'serviceTier.type' failed to satisfy constraint: Member must not be null");
    expect(fake.requests.every((r) => r.answered === undefined)).toBe(true);
  });

  it("meets the gateway's bedrock provider: chat's service_tier sent as serviceTier, the answered one read back into PRICE_FACTS", async () => {
    const config: BedrockProviderConfig = {
      type: 'bedrock',
      region: fake.region,
      base_url: fake.url,
      access_key_id_env: 'FAKE_BEDROCK_SPEC_KEY_ID',
      secret_access_key_env: 'FAKE_BEDROCK_SPEC_SECRET',
      max_connections: 4,
      timeouts: { connect_ms: 1000, request_ms: 5000 },
    };
    const provider = new BedrockProvider('bedrock-fake', config, { FAKE_BEDROCK_SPEC_KEY_ID: fake.accessKeyId, FAKE_BEDROCK_SPEC_SECRET: fake.secretAccessKey });
    const model = { id: 'claude', upstream_model: MODEL, max_output_tokens: 256 } as CatalogEntry;
    const body = (service_tier?: string) => ({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }], ...(service_tier && { service_tier }) }) as ChatRequestBody;
    const signal = new AbortController().signal;
    try {
      expect((await provider.chat(model, body('fast'), signal)).body[PRICE_FACTS]).toEqual({ service_tier: 'priority' });
      expect((await provider.chat(model, body('auto'), signal)).body[PRICE_FACTS]).toEqual({ service_tier: 'default' });
      const chunks: ChatChunk[] = [];
      for await (const chunk of await provider.chatStream(model, body('flex'), signal)) chunks.push(chunk);
      expect(chunks.at(-1)).toMatchObject({ choices: [], [PRICE_FACTS]: { service_tier: 'flex' } });
      expect(fake.requests.map((r) => r.body.serviceTier)).toEqual([{ type: 'priority' }, undefined, { type: 'flex' }]);
    } finally {
      await provider.close();
    }
  });

  it('refuses a request signed with a wrong secret key (403 InvalidSignatureException) and an unknown key id', async () => {
    const wrong = await client('not-the-secret')
      .send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] }))
      .catch((e) => e);
    expect(wrong.name).toBe('InvalidSignatureException');
    expect(wrong.$metadata.httpStatusCode).toBe(403);
    expect(wrong.message).toContain('The request signature we calculated does not match the signature you provided.');
    expect(wrong.message).toContain('/model/anthropic.claude-sonnet-4-5-20250929-v1%253A0/converse');
    expect(fake.requests[0].signatureValid).toBe(false);
    const unknown = await client(fake.secretAccessKey, 'AKIAUNKNOWN000000000')
      .send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] }))
      .catch((e) => e);
    expect(unknown).toMatchObject({ name: 'UnrecognizedClientException', $metadata: { httpStatusCode: 403 } });
  });

  it('answers Bedrock\'s errors as the SDK\'s named exceptions', async () => {
    const call = (extra: Record<string, unknown> = {}) =>
      client()
        .send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi' }] }], ...extra }))
        .catch((e) => e);
    fake.failNext('throttling');
    expect(await call()).toMatchObject({ name: 'ThrottlingException', $metadata: { httpStatusCode: 429 } });
    fake.failNext('serviceUnavailable');
    expect(await call()).toMatchObject({ name: 'ServiceUnavailableException', $metadata: { httpStatusCode: 503 } });
    fake.failNext('internalServer');
    expect(await call()).toMatchObject({ name: 'InternalServerException', $metadata: { httpStatusCode: 500 } });
    const invalid = await call({ inferenceConfig: { temperature: 1.5 } });
    expect(invalid).toMatchObject({ name: 'ValidationException', $metadata: { httpStatusCode: 400 } });
    expect(invalid.message).toContain("at 'inferenceConfig.temperature'");
    // The SDK sends only Converse's members: a middleware adds one to the built body, before the request is signed.
    const extended = client();
    extended.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { body: string | Uint8Array; headers: Record<string, string> };
        const sent = typeof request.body === 'string' ? request.body : new TextDecoder().decode(request.body);
        request.body = JSON.stringify({ ...JSON.parse(sent), some_future_field: true });
        request.headers['content-length'] = String(Buffer.byteLength(request.body));
        return next(args);
      },
      { step: 'build' },
    );
    const extra = await extended.send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] })).catch((e) => e);
    expect(extra).toMatchObject({ name: 'ValidationException', $metadata: { httpStatusCode: 400 } });
    expect(extra.message).toBe('Malformed input request: #: extraneous key [some_future_field] is not permitted, please reformat your input and try again.');
    const turns = await client()
      .send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'a' }] }, { role: 'user', content: [{ text: 'b' }] }] }))
      .catch((e) => e);
    expect(turns.message).toContain('must alternate between user and assistant roles');
    const unknown = await client()
      .send(new ConverseCommand({ modelId: 'anthropic.claude-nonexistent-v9:0', messages: [{ role: 'user', content: [{ text: 'Hi' }] }] }))
      .catch((e) => e);
    expect(unknown).toMatchObject({ name: 'ResourceNotFoundException', $metadata: { httpStatusCode: 404 } });
    const tools = await call({ messages: [{ role: 'user', content: [{ text: 'Hi' }] }, { role: 'assistant', content: [{ toolUse: { toolUseId: 't1', name: 'f', input: {} } }] }, { role: 'user', content: [{ text: 'no result' }] }] });
    expect(tools.message).toBe('Expected toolResult blocks at messages.2.content for the following Ids: t1');
    const toolUse = { role: 'assistant', content: [{ toolUse: { toolUseId: 't1', name: 'f', input: {} } }] };
    const noConfig = await call({ messages: [{ role: 'user', content: [{ text: 'Hi' }] }, toolUse, { role: 'user', content: [{ toolResult: { toolUseId: 't1', content: [{ text: 'ok' }] } }] }] });
    expect(noConfig.message).toBe('The toolConfig field must be defined when using toolUse and toolResult content blocks.');
  });

  it('fails a stream with an exception event, and cuts one mid-frame', async () => {
    fake.reply = { text: 'one two three four five six seven eight nine ten eleven twelve' };
    fake.failNext('exceptionEvent');
    const output = await client().send(new ConverseStreamCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Count' }] }] }));
    const seen: ConverseStreamOutput[] = [];
    const err = await (async () => {
      for await (const event of output.stream!) seen.push(event);
    })().catch((e) => e);
    expect(seen.length).toBeGreaterThan(0);
    expect(err).toMatchObject({ name: 'ModelStreamErrorException', message: 'The fake model failed while streaming.' });

    fake.failNext('cutStream');
    const cut = await client().send(new ConverseStreamCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Count' }] }] }));
    await expect(collect(cut.stream)).rejects.toThrow();
    expect(fake.requests[1].finished).toBe(false);
  });

  it('records a request the client aborted', async () => {
    fake.failNext('hang');
    const controller = new AbortController();
    const pending = client()
      .send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] }), { abortSignal: controller.signal })
      .catch((e) => e);
    await fake.waitFor(() => fake.requests.length === 1);
    controller.abort();
    expect((await pending).name).toBe('AbortError');
    await fake.waitFor(() => fake.aborted().length === 1);
  });
});
