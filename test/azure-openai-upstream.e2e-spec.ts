import { toFile } from 'openai';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { audioFixture, audioUsageRows, creditsOf } from './support/audio-support';
import { chatCatalogEntry, moneyOf, parseSseData, postChat, PricedModel, sdk, waitForUsageRows } from './support/chat-support';
import { costMicrosByClass } from './support/cost-oracle';
import { FakeAzureOpenAI } from './support/fake-azure-openai';
import { FAKE_OPENAI_KEY, fakeOpenAiProvider, FakeUpstream, startFakeUpstream } from './support/fake-upstream';
import { anthropic } from './support/messages-support';
import { TestApp } from './support/test-app';
import { deploymentsInOrder, expectChargedExactly, UPSTREAM_TIMEOUTS, useUpstreamGateway } from './support/upstream-gateway';

/**
 * The `azure-openai` provider (issue 34, DESIGN.md section 11) against the fake Azure OpenAI resource, through the
 * official SDKs: chat, Responses and Messages clients on an Azure deployment (its path, api-version and api-key),
 * cached tokens at their own price, transcription and speech deployments, a 429 served by an OpenAI deployment of
 * the same model, the content filter's refusal passed through with its categories, a cut stream.
 */
const KEY_ENV = 'AZURE_OPENAI_UPSTREAM_TEST_KEY';
/** GPT-4o's prices on Azure: cached input at half the input price. */
const PRICES = { input: 2.5, output: 10, cachedInput: 1.25 };
const GPT: PricedModel = { id: 'azure-gpt-4o', ...PRICES, maxOutput: 16384 };
const FAILOVER: PricedModel = { id: 'gpt-4o-failover', ...PRICES, maxOutput: 16384 };
const STT = { id: 'azure-whisper', deployment: 'whisper-prod' };
const TTS = { id: 'azure-tts', deployment: 'tts-prod' };

describe('azure-openai upstream', () => {
  let azure: FakeAzureOpenAI, openai: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;

  useUpstreamGateway({
    fakes: async () => ({ azure: await new FakeAzureOpenAI().start(), openai: await startFakeUpstream() }),
    config: (fakes, raw) => {
      process.env[KEY_ENV] = fakes.azure.apiKey;
      raw.providers.azure = { type: 'azure-openai', base_url: fakes.azure.url, api_version: '2024-10-21', api_key_env: KEY_ENV, timeouts: UPSTREAM_TIMEOUTS };
      raw.providers.openai_direct = fakeOpenAiProvider(fakes.openai.url);
      raw.catalog.push(chatCatalogEntry(GPT, { provider: 'azure', upstream_model: 'gpt-4o-prod' }));
      raw.catalog.push(chatCatalogEntry(FAILOVER, { deployments: deploymentsInOrder(['azure', 'gpt-4o-mini-eu'], ['openai_direct', 'gpt-4o']) }));
      for (const entry of raw.catalog) if (entry.kind === 'transcription') entry.active = false;
      raw.catalog.push({ id: STT.id, kind: 'transcription', provider: 'azure', upstream_model: STT.deployment, active: true });
      raw.catalog.push({ id: TTS.id, kind: 'speech', provider: 'azure', upstream_model: TTS.deployment, voices: ['alloy', 'echo'] });
    },
    ready: (suite) => ({ fakes: { azure, openai }, gw, admin, db } = suite),
  });

  /** The charge is the fake's usage at the model's class prices, exactly; ledger = balance. */
  const expectCharged = (accountId: string, usage: { prompt: number; completion: number; cached?: number }, startMicros?: bigint) => expectChargedExactly(db, accountId, costMicrosByClass(PRICES, usage), startMicros);

  /** What reached Azure: the deployment's path, the provider's api-version, its key in api-key, and no bearer. */
  function expectAzureRequest(index: number, deployment: string, operation: string) {
    const sent = azure.requests[index];
    expect(sent.path).toBe(`/openai/deployments/${deployment}/${operation}`);
    expect(sent.query.get('api-version')).toBe('2024-10-21');
    expect(sent.headers['api-key']).toBe('azure-fake-key-0123456789abcdef');
    expect(sent.headers.authorization).toBeUndefined();
    return sent;
  }

  const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

  describe('chat', () => {
    it('answers chat JSON from the deployment, charging cached tokens at their own price, exactly', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      azure.reply = { content: 'It is sunny in Paris today.', promptTokens: 1200, cachedTokens: 1024 };
      const answer = await sdk(gw, key).chat.completions.create({ model: GPT.id, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools });
      const sent = expectAzureRequest(0, 'gpt-4o-prod', 'chat/completions');
      expect(sent.body.messages).toEqual([{ role: 'user', content: 'Weather in Paris?' }]);
      expect(sent.body.tools).toEqual(tools);
      expect(answer.model).toBe(GPT.id);
      expect(answer.choices[0].message.content).toBe('It is sunny in Paris today.');
      expect(answer.usage).toMatchObject({ prompt_tokens: 1200, completion_tokens: 6, prompt_tokens_details: { cached_tokens: 1024 } });
      await expectCharged(accountId, { prompt: 1200, completion: 6, cached: 1024 });
      const [row] = await waitForUsageRows(db, accountId, 1);
      expect(row).toMatchObject({ model: GPT.id, prompt_tokens: 1200, completion_tokens: 6, cached_tokens: 1024, status: 200 });
    });

    it('streams tool calls without Azure\'s prompt-filter chunk, with the usage chunk last, charged as the fake reported', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      azure.reply = { content: '', promptTokens: 40, cachedTokens: 16, toolCalls: [{ id: 'call_az1', name: 'get_weather', arguments: '{"city":"Oslo"}' }] };
      const stream = await sdk(gw, key).chat.completions.create({ model: GPT.id, stream: true, stream_options: { include_usage: true }, tools, messages: [{ role: 'user', content: 'Oslo?' }] });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      expectAzureRequest(0, 'gpt-4o-prod', 'chat/completions');
      expect(azure.requests[0].body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
      // Only the usage chunk has no choice: the prompt-filter chunk Azure sends first did not reach the client.
      expect(chunks.slice(0, -1).every((c) => c.choices.length === 1)).toBe(true);
      expect(chunks.at(-1)!.choices).toEqual([]);
      const calls = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
      expect(calls[0]).toMatchObject({ id: 'call_az1', function: { name: 'get_weather' } });
      expect(calls.map((c) => c.function?.arguments ?? '').join('')).toBe('{"city":"Oslo"}');
      expect(chunks.find((c) => c.choices[0]?.finish_reason)!.choices[0].finish_reason).toBe('tool_calls');
      expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 40, completion_tokens: 8, prompt_tokens_details: { cached_tokens: 16 } });
      expect(chunks.every((c) => c.model === GPT.id)).toBe(true);
      await expectCharged(accountId, { prompt: 40, completion: 8, cached: 16 });
    });

    it('relays an answer the output filter cut with finish_reason content_filter, charged for what was produced', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      azure.reply = { content: 'one two three four five six', promptTokens: 10 };
      azure.failNext('filteredAnswer');
      const res = await postChat(gw, key, { model: GPT.id, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Count.' }] });
      const events = parseSseData(await res.text());
      expect(events.at(-1)).toBe('[DONE]');
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
      expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('one two three');
      expect(chunks.find((c) => c.choices[0]?.finish_reason)!.choices[0].finish_reason).toBe('content_filter');
      await expectCharged(accountId, { prompt: 10, completion: 3 });
    });
  });

  describe('Responses and Messages clients', () => {
    it('serves the Responses API, JSON and streamed', async () => {
      const { key } = await admin.createAccount({ creditsUsd: '10' });
      const client = sdk(gw, key);
      azure.reply = { content: 'Sunny in Lima.', promptTokens: 30, cachedTokens: 0 };
      const response = await client.responses.create({ model: GPT.id, instructions: 'Be brief.', input: 'Lima?' });
      expect(response.output_text).toBe('Sunny in Lima.');
      expect(response.usage).toMatchObject({ input_tokens: 30, output_tokens: 3 });
      const sent = expectAzureRequest(0, 'gpt-4o-prod', 'chat/completions');
      expect(sent.body.messages[0]).toMatchObject({ role: 'system' });

      const events = await client.responses.create({ model: GPT.id, input: 'Lima?', stream: true });
      let text = '';
      let completed: any = null;
      for await (const event of events) {
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.completed') completed = event.response;
      }
      expect(text).toBe('Sunny in Lima.');
      expect(completed.usage).toMatchObject({ input_tokens: 30, output_tokens: 3 });
      expect(azure.requests[1].body.stream).toBe(true);
    });

    it('serves an Anthropic SDK Messages request, charged exactly', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      azure.reply = { content: 'Hello from Azure.', promptTokens: 25, cachedTokens: 10 };
      const message = await anthropic(gw, key).messages.create({ model: GPT.id, max_tokens: 200, system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] });
      expect(message.content).toEqual([{ type: 'text', text: 'Hello from Azure.' }]);
      expect(message.stop_reason).toBe('end_turn');
      const sent = expectAzureRequest(0, 'gpt-4o-prod', 'chat/completions');
      expect(sent.body.messages).toEqual([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ]);
      await expectCharged(accountId, { prompt: 25, completion: 3, cached: 10 });
    });
  });

  describe('audio', () => {
    it('transcribes through the Azure whisper deployment and speaks through the tts deployment, without touching credits', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10', subscription: 'active' });
      const result = await sdk(gw, key).audio.transcriptions.create({ file: await toFile(audioFixture('hello.wav'), 'hello.wav', { type: 'audio/wav' }), model: 'whisper-1' });
      expect(result).toEqual({ text: 'Hello from Azure.' });
      const upload = expectAzureRequest(0, STT.deployment, 'audio/transcriptions');
      expect(upload.fields.response_format).toBe('verbose_json');
      expect(upload.file).toMatchObject({ filename: 'hello.wav', size: audioFixture('hello.wav').length });

      const speech = await sdk(gw, key).audio.speech.create({ model: TTS.id, input: 'Hello there.', voice: 'echo' });
      expect(Buffer.from(await speech.arrayBuffer())).toEqual(azure.speechAudio);
      expect(speech.headers.get('content-type')).toBe('audio/mpeg');
      const said = expectAzureRequest(1, TTS.deployment, 'audio/speech');
      expect(said.body).toMatchObject({ input: 'Hello there.', voice: 'echo' });

      const rows = await audioUsageRows(db, accountId, 2);
      expect(rows.map((r) => [r.model, r.status, r.cost_micros])).toEqual([
        [STT.id, 200, '0'],
        [TTS.id, 200, '0'],
      ]);
      expect(Number(rows[0].audio_seconds)).toBe(2.5);
      expect((await creditsOf(db, accountId)).balance).toBe('10000000');
    });
  });

  describe('failures', () => {
    it('serves a 429 on the Azure deployment from the OpenAI deployment of the same model, charged once', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      azure.retryAfterS = 1;
      azure.failNext('status429');
      const answer = await sdk(gw, key).chat.completions.create({ model: FAILOVER.id, messages: [{ role: 'user', content: 'Hi' }] });
      expect(answer.choices[0].message.content).toBe(FakeUpstream.defaultReply().content);
      expectAzureRequest(0, 'gpt-4o-mini-eu', 'chat/completions');
      expect(azure.requests).toHaveLength(1);
      expect(openai.requests).toHaveLength(1);
      expect(openai.requests[0].path).toBe('/v1/chat/completions');
      expect(openai.requests[0].headers.authorization).toBe(`Bearer ${FAKE_OPENAI_KEY}`);
      expect(openai.requests[0].body.model).toBe('gpt-4o');
      const { promptTokens, completionTokens } = FakeUpstream.defaultReply();
      await expectCharged(accountId, { prompt: promptTokens, completion: completionTokens });
    });

    it('passes the content filter\'s 400 through as upstream_rejected naming the filtered categories, charging nothing', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      azure.filteredCategories = { hate: 'high', violence: 'medium' };
      azure.failNext('contentFilter');
      const err = await sdk(gw, key)
        .chat.completions.create({ model: GPT.id, messages: [{ role: 'user', content: 'Something hateful.' }] })
        .catch((e) => e);
      expect(err.status).toBe(400);
      expect(err.error).toMatchObject({ code: 'upstream_rejected' });
      expect(err.error.message).toContain('prompt was filtered');
      expect(err.error.message).toContain('hate (high)');
      expect(err.error.message).toContain('violence (medium)');
      expect(err.error.message).not.toContain('sexual');
      expect(azure.requests).toHaveLength(1);
      expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, reserved: 0n, charges: [] });
      const [row] = await waitForUsageRows(db, accountId, 1);
      expect(row).toMatchObject({ status: 400, error_code: 'upstream_rejected', cost_micros: '0' });
    });

    it('ends a stream cut after its first bytes with an error event, charging nothing', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '10' });
      azure.reply = { content: 'one two three four five six seven eight nine ten', promptTokens: 12 };
      // The prompt-filter chunk, the role chunk, then two words before the cut.
      azure.faultAfterEvents = 4;
      azure.failNext('cutStream');
      const res = await postChat(gw, key, { model: GPT.id, stream: true, messages: [{ role: 'user', content: 'Count.' }] });
      expect(res.status).toBe(200);
      const events = parseSseData(await res.text());
      expect(events.some((e) => e.includes('"content":"one"'))).toBe(true);
      expect(events).not.toContain('[DONE]');
      expect(JSON.parse(events.at(-1)!).error).toMatchObject({ code: 'upstream_error' });
      expect(await moneyOf(db, accountId)).toMatchObject({ balance: 10_000_000n, reserved: 0n, charges: [] });
      const [row] = await waitForUsageRows(db, accountId, 1);
      expect(row).toMatchObject({ error_code: 'upstream_error', cost_micros: '0', streamed: true });
    });
  });
});
