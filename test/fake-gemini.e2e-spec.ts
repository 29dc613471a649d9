import { ApiError, FunctionCallingConfigMode, GoogleGenAI, ServiceTier } from '@google/genai';
import type { CatalogEntry } from '../src/config/gateway-config.schema';
import type { GeminiProviderConfig } from '../src/providers/gemini/gemini.config';
import { ChatChunk, PRICE_FACTS } from '../src/providers/chat-contract';
import { GeminiProvider } from '../src/providers/gemini/gemini.provider';
import type { ChatRequestBody } from '../src/providers/upstream-provider';
import { fakeTokenCount } from './support/fake-tokens';
import { FakeGemini, startFakeGemini } from './support/fake-gemini';

// The fake Gemini upstream is only useful if Google's own client accepts what it says.
describe('fake Gemini upstream (self-check with @google/genai)', () => {
  let fake: FakeGemini;
  let ai: GoogleGenAI;

  beforeAll(async () => {
    fake = await startFakeGemini();
    ai = client(fake.apiKey);
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    fake.resetState();
    // @google/genai splits events on blank lines only: Google's own framing (CRLF CRLF, one write per event).
    fake.sseFraming = 'exact';
  });

  function client(apiKey: string): GoogleGenAI {
    // The SDK's own `fetch` option: its default dispatcher reads Node's global undici dispatcher, which jest's
    // sandbox does not see. Requests, answers and stream parsing are the SDK's as ever; no retries unless asked.
    return new GoogleGenAI({ apiKey, httpOptions: { baseUrl: fake.url, apiVersion: 'v1beta', fetch: (input, init) => fetch(input, init) } });
  }

  const weather = {
    name: 'get_weather',
    description: 'The weather in a city.',
    parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  };

  it('answers generateContent with text and usage computed from the request, and records it with the key header', async () => {
    const response = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'Say hello, please.',
      config: { systemInstruction: 'Be brief.', maxOutputTokens: 100, temperature: 0.3 },
    });
    expect(response.text).toBe(FakeGemini.defaultReply().text);
    expect(response.candidates?.[0]).toMatchObject({ finishReason: 'STOP', content: { role: 'model' } });
    const prompt = fakeTokenCount('Say hello, please.') + fakeTokenCount('Be brief.');
    expect(response.usageMetadata).toMatchObject({ promptTokenCount: prompt, candidatesTokenCount: fakeTokenCount(FakeGemini.defaultReply().text) });
    expect(response.usageMetadata?.totalTokenCount).toBe(prompt + fakeTokenCount(FakeGemini.defaultReply().text));
    const [seen] = fake.requests;
    expect(seen.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(seen.headers['x-goog-api-key']).toBe(fake.apiKey);
    expect(seen.body).toMatchObject({ contents: [{ role: 'user', parts: [{ text: 'Say hello, please.' }] }], systemInstruction: { parts: [{ text: 'Be brief.' }] }, generationConfig: { maxOutputTokens: 100, temperature: 0.3 } });
  });

  it('streams with alt=sse, no end marker: the pieces add up to the JSON answer, usage on the last event', async () => {
    fake.reply = { text: 'One two three four five six seven eight nine ten.', thought: 'Counting is easy.' };
    const request = { model: 'gemini-2.5-flash', contents: 'Count to ten.', config: { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } } };
    const json = await ai.models.generateContent(request);
    const stream = await ai.models.generateContentStream(request);
    let text = '';
    let thoughts = '';
    let events = 0;
    let last: any;
    for await (const chunk of stream) {
      events++;
      for (const part of chunk.candidates?.[0]?.content?.parts ?? []) {
        if (part.thought) thoughts += part.text ?? '';
        else text += part.text ?? '';
      }
      last = chunk;
    }
    expect(events).toBeGreaterThan(3);
    expect(text).toBe(fake.reply.text);
    expect(thoughts).toBe('Counting is easy.');
    expect(last.candidates[0].finishReason).toBe('STOP');
    expect(last.usageMetadata).toEqual(json.usageMetadata);
    expect(json.usageMetadata?.thoughtsTokenCount).toBe(fakeTokenCount('Counting is easy.'));
    expect(fake.requests[1].path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent');
    expect(fake.requests[1].query).toBe('?alt=sse');
    expect(fake.requests[1].finished).toBe(true);
  });

  it('counts thoughts without sending them when includeThoughts is off, and none with thinkingBudget 0', async () => {
    fake.reply = { text: 'Done.', thought: 'Some private reasoning here.' };
    const quiet = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Go', config: { thinkingConfig: { thinkingBudget: 2048 } } });
    expect(quiet.candidates?.[0]?.content?.parts).toEqual([{ text: 'Done.' }]);
    expect(quiet.usageMetadata?.thoughtsTokenCount).toBe(fakeTokenCount('Some private reasoning here.'));
    const off = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Go', config: { thinkingConfig: { thinkingBudget: 0 } } });
    expect(off.usageMetadata?.thoughtsTokenCount).toBeUndefined();
  });

  it('calls functions (JSON and streamed) and takes the function response back', async () => {
    fake.reply = { text: '', functionCalls: [{ name: 'get_weather', args: { city: 'Zürich', units: ['c'] } }] };
    const request = {
      model: 'gemini-2.5-flash',
      contents: 'Weather in Zürich?',
      config: { tools: [{ functionDeclarations: [weather] }], toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY, allowedFunctionNames: ['get_weather'] } } },
    };
    const response = await ai.models.generateContent(request);
    expect(response.functionCalls).toEqual([{ name: 'get_weather', args: { city: 'Zürich', units: ['c'] } }]);
    const streamed = await ai.models.generateContentStream(request);
    const calls: unknown[] = [];
    for await (const chunk of streamed) calls.push(...(chunk.functionCalls ?? []));
    expect(calls).toEqual(response.functionCalls);

    fake.reply = { text: 'It is sunny in Zürich.' };
    const answer = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: [
        { role: 'user', parts: [{ text: 'Weather in Zürich?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Zürich' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: 'sunny' } } }] },
      ],
      config: { tools: [{ functionDeclarations: [weather] }] },
    });
    expect(answer.text).toBe('It is sunny in Zürich.');
    expect(fake.requests[2].body.contents[2].parts[0].functionResponse).toEqual({ name: 'get_weather', response: { result: 'sunny' } });
  });

  it('reports cachedContentTokenCount for a named cachedContent (inside promptTokenCount) and for a repeated prefix', async () => {
    fake.cachedContents.set('cachedContents/abc123', 4000);
    const explicit = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Summarise the document.', config: { cachedContent: 'cachedContents/abc123' } });
    expect(explicit.usageMetadata).toMatchObject({ cachedContentTokenCount: 4000, promptTokenCount: 4000 + fakeTokenCount('Summarise the document.') });
    fake.implicitCacheMinTokens = 50;
    const long = 'A very long shared preamble for every request. '.repeat(10);
    const ask = () => ai.models.generateContent({ model: 'gemini-2.5-flash', contents: [{ role: 'user', parts: [{ text: long }] }, { role: 'model', parts: [{ text: 'OK.' }] }, { role: 'user', parts: [{ text: `Q${fake.requests.length}` }] }] });
    expect((await ask()).usageMetadata?.cachedContentTokenCount).toBeUndefined();
    expect((await ask()).usageMetadata?.cachedContentTokenCount).toBe(fakeTokenCount(long) + fakeTokenCount('OK.'));
  });

  it('finishes MAX_TOKENS when maxOutputTokens cuts the text, and blocks a prompt with promptFeedback', async () => {
    fake.reply = { text: 'one two three four five six' };
    const cut = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Go', config: { maxOutputTokens: 3 } });
    expect(cut.text).toBe('one two three');
    expect(cut.candidates?.[0]?.finishReason).toBe('MAX_TOKENS');
    fake.reply = { text: '', blockReason: 'SAFETY' };
    const blocked = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Go' });
    expect(blocked.candidates).toBeUndefined();
    expect(blocked.promptFeedback?.blockReason).toBe('SAFETY');
  });

  it('answers errors in Google\'s shape: bad key 400 API_KEY_INVALID, no key 403, unknown model 404, bad bodies 400', async () => {
    const status = async (p: Promise<unknown>) => {
      const err = (await p.catch((e) => e)) as ApiError;
      expect(err).toBeInstanceOf(ApiError);
      return { status: err.status, body: JSON.parse(err.message) };
    };
    const bad = await status(client('wrong').models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi' }));
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', details: [{ reason: 'API_KEY_INVALID' }] });
    const noKey = await fetch(`${fake.url}/v1beta/models/gemini-2.5-flash:generateContent`, { method: 'POST', body: JSON.stringify({ contents: [{ parts: [{ text: 'Hi' }] }] }) });
    expect(noKey.status).toBe(403);
    expect(((await noKey.json()) as any).error.status).toBe('PERMISSION_DENIED');
    const byQuery = await fetch(`${fake.url}/v1beta/models/gemini-2.5-flash:generateContent?key=${fake.apiKey}`, { method: 'POST', body: JSON.stringify({ contents: [{ parts: [{ text: 'Hi' }] }] }) });
    expect(byQuery.status).toBe(200);
    const missing = await status(ai.models.generateContent({ model: 'gemini-0-nope', contents: 'Hi' }));
    expect(missing).toMatchObject({ status: 404, body: { error: { status: 'NOT_FOUND', message: expect.stringContaining('models/gemini-0-nope is not found') } } });
    const role = await status(ai.models.generateContent({ model: 'gemini-2.5-flash', contents: [{ role: 'assistant', parts: [{ text: 'Hi' }] }] }));
    expect(role).toMatchObject({ status: 400, body: { error: { message: 'Please use a valid role: user, model.' } } });
    const unnamed = await status(ai.models.generateContent({ model: 'gemini-2.5-flash', contents: [{ role: 'user', parts: [{ functionResponse: { response: { a: 1 } } }] }] }));
    expect(unnamed.body.error.message).toContain('function_response.name: Name cannot be empty');
    const empty = await fetch(`${fake.url}/v1beta/models/gemini-2.5-flash:generateContent`, { method: 'POST', headers: { 'x-goog-api-key': fake.apiKey }, body: JSON.stringify({ contents: [] }) });
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as any).error.message).toContain('contents is not specified');
    const post = (body: unknown) => fetch(`${fake.url}/v1beta/models/gemini-2.5-flash:generateContent`, { method: 'POST', headers: { 'x-goog-api-key': fake.apiKey }, body: JSON.stringify(body) });
    const unknownField = await post({ contents: [{ parts: [{ text: 'Hi' }] }], some_future_field: true });
    expect(unknownField.status).toBe(400);
    expect(await unknownField.json()).toEqual({ error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Invalid JSON payload received. Unknown name "some_future_field": Cannot find field.' } });
    const unknownConfig = await post({ contents: [{ parts: [{ text: 'Hi' }] }], generationConfig: { logitBias: { 1: 2 } } });
    expect(await unknownConfig.json()).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT', message: expect.stringContaining(`Unknown name "logitBias" at 'generation_config'`) } });
  });

  it('serves the tier asked in serviceTier and names the one that served it in x-gemini-service-tier, JSON and streamed', async () => {
    const header = (r: { sdkHttpResponse?: { headers?: Record<string, string> } }) => r.sdkHttpResponse?.headers?.['x-gemini-service-tier'];
    const ask = async (serviceTier?: ServiceTier) => header(await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi', config: serviceTier ? { serviceTier } : {} }));
    const streamed = async (serviceTier: ServiceTier) => {
      const seen: (string | undefined)[] = [];
      for await (const chunk of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Count to ten.', config: { serviceTier } })) seen.push(header(chunk));
      expect(seen.length).toBeGreaterThan(1);
      return [...new Set(seen)];
    };
    expect([await ask(), await ask(ServiceTier.STANDARD), await ask(ServiceTier.FLEX), await ask(ServiceTier.PRIORITY)]).toEqual(['standard', 'standard', 'flex', 'priority']);
    expect(fake.requests.map((r) => r.body.serviceTier)).toEqual([undefined, 'standard', 'flex', 'priority']);
    expect(await streamed(ServiceTier.PRIORITY)).toEqual(['priority']);
    // Priority capacity short: served, and said to be served, at standard.
    fake.downgradePriority = true;
    expect([await ask(ServiceTier.PRIORITY), await ask(ServiceTier.FLEX)]).toEqual(['standard', 'flex']);
    expect(await streamed(ServiceTier.PRIORITY)).toEqual(['standard']);
    // The REST spellings of Google's pages: `service_tier`, upper case, with or without the enum's prefix.
    fake.downgradePriority = false;
    const post = (body: Record<string, unknown>) =>
      fetch(`${fake.url}/v1beta/models/gemini-2.5-flash:generateContent`, { method: 'POST', headers: { 'x-goog-api-key': fake.apiKey }, body: JSON.stringify({ contents: [{ parts: [{ text: 'Hi' }] }], ...body }) });
    for (const [tier, served] of [['FLEX', 'flex'], ['SERVICE_TIER_PRIORITY', 'priority'], ['unspecified', 'standard']]) {
      const res = await post({ service_tier: tier });
      expect([res.status, res.headers.get('x-gemini-service-tier')]).toEqual([200, served]);
    }
  });

  it('refuses a tier Gemini does not take with 400 INVALID_ARGUMENT and its field violation', async () => {
    const refused = (await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi', config: { serviceTier: 'turbo' as ServiceTier } }).catch((e) => e)) as ApiError;
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused.status).toBe(400);
    const message = `Invalid value at 'service_tier' (type.googleapis.com/google.ai.generativelanguage.v1beta.ServiceTier), "turbo"`;
    expect(JSON.parse(refused.message)).toEqual({
      error: { code: 400, status: 'INVALID_ARGUMENT', message, details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'service_tier', description: message }] }] },
    });
    const prefixed = await fetch(`${fake.url}/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': fake.apiKey },
      body: JSON.stringify({ contents: [{ parts: [{ text: 'Hi' }] }], service_tier: 'SERVICE_TIER_TURBO' }),
    });
    expect(prefixed.status).toBe(400);
    expect(prefixed.headers.get('x-gemini-service-tier')).toBeNull();
  });

  it("meets the gateway's gemini provider: chat's service_tier sent as serviceTier, the header read back into PRICE_FACTS", async () => {
    const config: GeminiProviderConfig = { type: 'gemini', base_url: fake.url, api_key_env: 'FAKE_GEMINI_SPEC_KEY', max_connections: 4, timeouts: { connect_ms: 1000, request_ms: 5000 } };
    const provider = new GeminiProvider('gemini-fake', config, { FAKE_GEMINI_SPEC_KEY: fake.apiKey });
    const model = { id: 'gemini', upstream_model: 'gemini-2.5-flash', max_output_tokens: 256 } as CatalogEntry;
    const body = (service_tier?: string) => ({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'Hi' }], ...(service_tier && { service_tier }) }) as ChatRequestBody;
    const signal = new AbortController().signal;
    try {
      expect((await provider.chat(model, body('fast'), signal)).body[PRICE_FACTS]).toEqual({ service_tier: 'priority' });
      expect((await provider.chat(model, body(), signal)).body[PRICE_FACTS]).toEqual({ service_tier: 'standard' });
      fake.downgradePriority = true;
      const chunks: ChatChunk[] = [];
      for await (const chunk of await provider.chatStream(model, body('priority'), signal)) chunks.push(chunk);
      expect(chunks.map((c) => c[PRICE_FACTS])).toEqual(chunks.map(() => ({ service_tier: 'standard' })));
      expect(fake.requests.map((r) => r.body.serviceTier)).toEqual(['priority', undefined, 'priority']);
    } finally {
      await provider.close();
    }
  });

  it('fails on demand: 429 RESOURCE_EXHAUSTED, 503 UNAVAILABLE, an in-stream error, a cut stream', async () => {
    fake.failNext('status429');
    const limited = (await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi' }).catch((e) => e)) as ApiError;
    expect(limited.status).toBe(429);
    expect(JSON.parse(limited.message).error.status).toBe('RESOURCE_EXHAUSTED');
    fake.failNext('status503');
    expect(((await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi' }).catch((e) => e)) as ApiError).status).toBe(503);

    fake.reply = { text: 'one two three four five six seven eight nine ten eleven twelve' };
    fake.faultAfterEvents = 2;
    fake.failNext('errorEvent');
    const seen: string[] = [];
    const failed = await (async () => {
      for await (const chunk of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Count' })) seen.push(chunk.text ?? '');
    })().catch((e) => e);
    expect(failed).toBeInstanceOf(ApiError);
    expect((failed as ApiError).status).toBe(500);
    expect(seen).toHaveLength(2);

    fake.failNext('cutStream');
    const cut = await (async () => {
      for await (const _ of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Count' })) void _;
    })().catch((e) => e);
    // The socket closed mid-body: fetch's own TypeError ("terminated"), from outside jest's realm.
    expect(String((cut as Error).message)).toMatch(/terminated|Incomplete JSON segment/);
  });
});
