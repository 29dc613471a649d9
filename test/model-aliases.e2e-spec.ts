import { toFile } from 'openai';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { audioFixture, audioForm, audioUsageRows, postTranscription } from './support/audio-support';
import { postChat, sdk, waitForUsageRows } from './support/chat-support';
import { anthropic } from './support/messages-support';
import { RawConfig, startTestApp, TestApp } from './support/test-app';

/** The shipped catalog (dev-echo, local-stt, local-tts with OpenAI's speech names), with aliases for chat and transcription too. */
const CHAT_ALIASES = ['echo-latest', 'acme/echo:1'];
const STT_ALIAS = 'whisper-1';
const MESSAGES = [{ role: 'user' as const, content: 'Tell me about aliases.' }];

describe('Catalog aliases (issue 32): accepted wherever the id is, recorded as requested', () => {
  let gw: TestApp;
  let admin: AdminClient;
  let db: DataSource;

  beforeAll(async () => {
    gw = await startTestApp({
      config: (raw: RawConfig) => {
        // Beside the shipped patterns (`claude-*`, `gpt-*-sol`: issue 43).
        const devEcho = raw.catalog.find((m: { id: string }) => m.id === 'dev-echo');
        devEcho.aliases = [...CHAT_ALIASES, ...devEcho.aliases];
        raw.catalog.find((m: { id: string }) => m.id === 'local-stt').aliases = [STT_ALIAS];
      },
    });
    admin = new AdminClient(gw.url);
    db = gw.app.get(DataSource);
  });
  afterAll(() => gw.close());

  /** An account's usage records as [endpoint, model, status], sorted: charged ones are written by their settlement, uncharged ones at once. */
  async function recorded(accountId: string, count: number) {
    return (await waitForUsageRows(db, accountId, count)).map((r) => [r.endpoint, r.model, r.status]).sort();
  }

  describe('GET /v1/models', () => {
    it('lists the ids only, never an alias; the shipped catalog aliases tts-1, tts-1-hd and gpt-4o-mini-tts to local-tts', async () => {
      const { key } = await admin.createAccount();
      const listed = (await sdk(gw, key).models.list()).data.map((m) => m.id);
      expect(listed.sort()).toEqual(['dev-echo', 'local-stt', 'local-tts']);
      expect(gw.config.catalog.find((m) => m.id === 'local-tts')?.aliases).toEqual(['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts']);
    });

    it.each([['tts-1', 'local-tts'], ['tts-1-hd', 'local-tts'], ['gpt-4o-mini-tts', 'local-tts'], ['acme/echo:1', 'dev-echo'], [STT_ALIAS, 'local-stt']])(
      'answers /v1/models/%s with its entry under the alias (%s)',
      async (alias, id) => {
        const { key } = await admin.createAccount();
        const client = sdk(gw, key);
        const entry = await client.models.retrieve(id);
        expect(await client.models.retrieve(alias)).toEqual({ ...entry, id: alias });
      },
    );
  });

  describe('chat, Responses, Messages and count_tokens', () => {
    it('serves a chat alias as its entry: the same answer and the same charge (its prices), recorded under the alias', async () => {
      const byId = await admin.createAccount({ creditsUsd: '1' });
      const byAlias = await admin.createAccount({ creditsUsd: '1' });
      const viaId = await sdk(gw, byId.key).chat.completions.create({ model: 'dev-echo', messages: MESSAGES });
      const viaAlias = await sdk(gw, byAlias.key).chat.completions.create({ model: 'echo-latest', messages: MESSAGES });
      // The answer names the catalog entry that served, as OpenAI names the snapshot behind an alias.
      expect(viaAlias.model).toBe('dev-echo');
      expect(viaAlias.choices[0].message.content).toBe(viaId.choices[0].message.content);
      expect(viaAlias.usage).toEqual(viaId.usage);

      const [idRow] = await waitForUsageRows(db, byId.accountId, 1);
      const [aliasRow] = await waitForUsageRows(db, byAlias.accountId, 1);
      expect(idRow).toMatchObject({ model: 'dev-echo', status: 200 });
      expect(aliasRow).toMatchObject({ model: 'echo-latest', endpoint: '/v1/chat/completions', status: 200, error_code: null });
      expect(BigInt(aliasRow.cost_micros)).toBeGreaterThan(0n);
      expect(aliasRow.cost_micros).toBe(idRow.cost_micros);
      expect((await admin.account(byAlias.accountId)).balance_usd).toBe((await admin.account(byId.accountId)).balance_usd);
    });

    it('streams through an alias and records it, streamed', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      const stream = await sdk(gw, key).chat.completions.create({ model: 'acme/echo:1', messages: MESSAGES, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      expect(text.length).toBeGreaterThan(0);
      const [row] = await waitForUsageRows(db, accountId, 1);
      expect(row).toMatchObject({ model: 'acme/echo:1', status: 200, streamed: true });
      expect(BigInt(row.cost_micros)).toBeGreaterThan(0n);
    });

    it('serves the Responses API, Messages and count_tokens through an alias, each recorded under it', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      const response = await sdk(gw, key).responses.create({ model: 'echo-latest', input: 'Tell me about aliases.' });
      expect(response.status).toBe('completed');
      expect(response.output_text.length).toBeGreaterThan(0);

      const claude = anthropic(gw, key);
      const message = await claude.messages.create({ model: 'echo-latest', max_tokens: 100, messages: MESSAGES });
      expect(message.content[0]).toMatchObject({ type: 'text' });
      const viaAlias = await claude.messages.countTokens({ model: 'echo-latest', messages: MESSAGES });
      const viaId = await claude.messages.countTokens({ model: 'dev-echo', messages: MESSAGES });
      expect(viaAlias).toEqual(viaId);

      expect(await recorded(accountId, 4)).toEqual([
        ['/v1/responses', 'echo-latest', 200],
        ['/v1/messages', 'echo-latest', 200],
        ['/v1/messages/count_tokens', 'echo-latest', 200],
        ['/v1/messages/count_tokens', 'dev-echo', 200],
      ].sort());
    });

    it('refuses an alias of another kind as the id would be refused: 400 model_not_hosted, recorded as sent', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      const res = await postChat(gw, key, { model: 'tts-1', messages: MESSAGES });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toMatchObject({ code: 'model_not_hosted', param: 'model', message: expect.stringContaining('"local-tts" is a speech model') });
      const [row] = await waitForUsageRows(db, accountId, 1);
      expect(row).toMatchObject({ model: 'tts-1', status: 400, error_code: 'model_not_hosted', cost_micros: '0' });
    });

    it('keeps an unknown name unknown: a prefix or another case of an alias is 400 unknown_model', async () => {
      const { key } = await admin.createAccount({ creditsUsd: '1' });
      for (const model of ['echo', 'ECHO-LATEST', 'acme/echo']) {
        const res = await postChat(gw, key, { model, messages: MESSAGES });
        expect({ model, status: res.status, code: ((await res.json()) as any).error.code }).toEqual({ model, status: 400, code: 'unknown_model' });
      }
    });

    it("checks a key's model list by entry: an alias in the list is kept as its id, and either name may then be used", async () => {
      const { accountId } = await admin.createAccount({ creditsUsd: '1', subscription: 'active' });
      const created = await admin.request('POST', `/accounts/${accountId}/keys`, { name: 'aliased', models: ['echo-latest', 'tts-1', 'dev-echo'] });
      expect(created.status).toBe(201);
      expect(created.body.models).toEqual(['dev-echo', 'local-tts']);
      const key: string = created.body.key;
      for (const model of ['dev-echo', 'acme/echo:1']) {
        expect((await postChat(gw, key, { model, messages: MESSAGES })).status).toBe(200);
      }

      const chatOnly = await admin.request('POST', `/accounts/${accountId}/keys`, { name: 'chat only', models: ['dev-echo'] });
      const refused = await sdk(gw, chatOnly.body.key).audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'hello' }).catch((e) => e);
      expect({ status: refused.status, code: refused.code }).toEqual({ status: 400, code: 'model_not_allowed' });
    });
  });

  describe('speech and transcription', () => {
    it("speaks through OpenAI's model name tts-1 with the SDK, records tts-1 and its characters", async () => {
      const { accountId, key } = await admin.createAccount({ subscription: 'active' });
      const res = await sdk(gw, key).audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'hello' });
      expect(res.headers.get('content-type')).toBe('audio/mpeg');
      const audio = Buffer.from(await res.arrayBuffer());
      // An MP3: an ID3 tag or an MPEG frame sync at the start.
      expect(audio.subarray(0, 3).toString('latin1') === 'ID3' || (audio[0] === 0xff && (audio[1] & 0xe0) === 0xe0)).toBe(true);
      expect(audio.length).toBeGreaterThan(1000);
      const [row] = await audioUsageRows(db, accountId, 1);
      expect(row).toMatchObject({ model: 'tts-1', endpoint: '/v1/audio/speech', status: 200, input_chars: 5, streamed: true, cost_micros: '0' });
    });

    it('records a transcription under the alias of the active model it named, and under the active id otherwise', async () => {
      const { accountId, key } = await admin.createAccount({ subscription: 'active' });
      const file = () => toFile(audioFixture('hello.wav'), 'hello.wav', { type: 'audio/wav' });
      const viaAlias = await sdk(gw, key).audio.transcriptions.create({ file: await file(), model: STT_ALIAS });
      const viaOther = await sdk(gw, key).audio.transcriptions.create({ file: await file(), model: 'gpt-4o-transcribe' });
      expect(viaAlias.text).toBe(viaOther.text);
      const res = await postTranscription(gw, key, audioForm({}, { data: audioFixture('hello.wav'), name: 'hello.wav' }));
      expect(res.status).toBe(200);
      expect(await recorded(accountId, 3)).toEqual([
        ['/v1/audio/transcriptions', 'local-stt', 200],
        ['/v1/audio/transcriptions', 'local-stt', 200],
        ['/v1/audio/transcriptions', STT_ALIAS, 200],
      ].sort());
    });
  });

  describe('alias patterns: the shipped `claude-*` and `gpt-*-sol` of dev-echo (issue 43)', () => {
    it("serves the names they match (Claude Code's and Codex's default models) on chat, Responses and Messages, recorded as sent", async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      const chat = await sdk(gw, key).chat.completions.create({ model: 'claude-sonnet-5-5', messages: MESSAGES });
      expect(chat.model).toBe('dev-echo');
      const response = await sdk(gw, key).responses.create({ model: 'gpt-6.2-sol', input: 'Tell me about patterns.' });
      expect({ status: response.status, model: response.model }).toEqual({ status: 'completed', model: 'dev-echo' });
      const message = await anthropic(gw, key).messages.create({ model: 'claude-opus-5-5', max_tokens: 100, messages: MESSAGES });
      expect(message.model).toBe('dev-echo');
      // Anchored at both ends: a longer name is not Codex's.
      const unknown = await postChat(gw, key, { model: 'gpt-6.2-solo', messages: MESSAGES });
      expect({ status: unknown.status, code: ((await unknown.json()) as any).error.code }).toEqual({ status: 400, code: 'unknown_model' });

      expect(await recorded(accountId, 4)).toEqual([
        ['/v1/chat/completions', 'claude-sonnet-5-5', 200],
        ['/v1/responses', 'gpt-6.2-sol', 200],
        ['/v1/messages', 'claude-opus-5-5', 200],
        ['/v1/chat/completions', 'gpt-6.2-solo', 400],
      ].sort());
      // The usage view shows the matched names as models of the catalog, each on its row; the unknown one apart.
      const own = (await (await fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json()) as any;
      expect(own.by_model.map((r: any) => [r.model, r.unknown, r.requests])).toEqual(
        expect.arrayContaining([['claude-sonnet-5-5', false, 1], ['gpt-6.2-sol', false, 1], ['claude-opus-5-5', false, 1], [null, true, 1]]),
      );
      expect(own.by_model).toHaveLength(4);
    });

    it('answers /v1/models/{name} for a name they match, under that name, and lists ids only', async () => {
      const { key } = await admin.createAccount();
      const client = sdk(gw, key);
      const entry = await client.models.retrieve('dev-echo');
      expect(await client.models.retrieve('claude-opus-5-5')).toEqual({ ...entry, id: 'claude-opus-5-5' });
      expect(await anthropic(gw, key).models.retrieve('gpt-6.2-sol')).toMatchObject({ type: 'model', id: 'gpt-6.2-sol' });
      expect(await client.models.retrieve('gpt-6.2-solo').catch((e) => e.status)).toBe(404);
      expect((await client.models.list()).data.map((m) => m.id).sort()).toEqual(['dev-echo', 'local-stt', 'local-tts']);
    });
  });

  it('shows aliases in the usage view as models of the catalog, each under its own name', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    for (const model of ['dev-echo', 'echo-latest', 'echo-latest']) expect((await postChat(gw, key, { model, messages: MESSAGES })).status).toBe(200);
    await waitForUsageRows(db, accountId, 3);
    const own = (await (await fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json()) as any;
    const byModel = own.by_model.map((r: any) => [r.model, r.unknown, r.requests]);
    expect(byModel).toEqual(expect.arrayContaining([['dev-echo', false, 1], ['echo-latest', false, 2]]));
    expect(byModel).toHaveLength(2);
  });
});
