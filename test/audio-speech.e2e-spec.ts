import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { audioUsageRows, errorOf, expectFairUse, FAKE_TTS, postSpeech, sdk, withFakeAudioProvider } from './support/audio-support';
import { useGatewayWithFake } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { RawConfig, startTestApp, TestApp } from './support/test-app';

const MAX_CHARS = 40;
const MP3_ONLY = 'fake-tts-mp3-only';
const NO_VOICES = 'fake-tts-any-voice';
const ALIASED = { id: 'fake-tts-aliased', voices: ['warm', 'deep'], voice_aliases: { alloy: 'warm', onyx: 'deep' } };

/** OpenAI's voice names (the SDK's `voice` type), all accepted by the shipped local-tts. */
const OPENAI_VOICES = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'nova', 'onyx', 'sage', 'shimmer', 'verse'] as const;

const CONTENT_TYPES: [string, string][] = [
  ['mp3', 'audio/mpeg'],
  ['opus', 'audio/ogg'],
  ['aac', 'audio/aac'],
  ['flac', 'audio/flac'],
  ['wav', 'audio/wav'],
  ['pcm', 'audio/pcm'],
];

describe('POST /v1/audio/speech (openai-compatible upstream)', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  let key: string;
  const suite = useGatewayWithFake((fakeUrl) => (raw: RawConfig) => {
    withFakeAudioProvider(fakeUrl)(raw);
    raw.catalog.push({ id: MP3_ONLY, kind: 'speech', provider: 'fake-audio', upstream_model: 'tts-1', voices: ['alloy'], response_formats: ['mp3'] });
    raw.catalog.push({ id: NO_VOICES, kind: 'speech', provider: 'fake-audio', upstream_model: 'tts-1', response_formats: ['wav'] });
    raw.catalog.push({ ...ALIASED, kind: 'speech', provider: 'fake-audio', upstream_model: 'tts-1' });
    raw.limits.speech_max_input_chars = MAX_CHARS;
  });
  beforeAll(async () => {
    ({ fake, gw, admin, db } = suite);
    ({ key } = await admin.createAccount({ subscription: 'active' }));
  });
  beforeEach(() => fake.resetState());

  describe('success', () => {
    it('returns the upstream audio through the SDK, with the default voice and format, and the upstream model', async () => {
      const res = await sdk(gw, key).audio.speech.create({ model: FAKE_TTS.id, input: 'Hello there.' } as any);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('audio/mpeg');
      expect(Buffer.from(await res.arrayBuffer())).toEqual(fake.speechAudio);
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0].body).toEqual({ model: FAKE_TTS.upstream, input: 'Hello there.', voice: 'alloy', response_format: 'mp3', speed: 1 });
    });

    it.each(CONTENT_TYPES)('answers %s with Content-Type %s', async (format, contentType) => {
      const res = await sdk(gw, key).audio.speech.create({ model: FAKE_TTS.id, input: 'Hi.', voice: 'echo', response_format: format as any, speed: 1.5 });
      expect(res.headers.get('content-type')).toBe(contentType);
      expect(Buffer.from(await res.arrayBuffer())).toEqual(fake.speechAudio);
      expect(fake.requests[0].body).toMatchObject({ voice: 'echo', response_format: format, speed: 1.5 });
    });

    it('accepts the speed bounds 0.25 and 4.0 and an input of exactly the maximum length', async () => {
      for (const speed of [0.25, 4]) {
        expect((await postSpeech(gw, key, { model: FAKE_TTS.id, input: 'x'.repeat(MAX_CHARS), speed })).status).toBe(200);
      }
    });

    it('counts characters, not UTF-16 units: emoji at the limit are accepted', async () => {
      const res = await postSpeech(gw, key, { model: FAKE_TTS.id, input: '😀'.repeat(MAX_CHARS) });
      expect(res.status).toBe(200);
    });

    it('takes any voice for a model that lists none', async () => {
      const res = await postSpeech(gw, key, { model: NO_VOICES, input: 'Hi.', voice: 'nova' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('audio/wav');
      expect(fake.requests[0].body).toMatchObject({ voice: 'nova', response_format: 'wav' });
    });

    it.each([
      ['an alias', 'onyx', 'deep'],
      ['another alias', 'alloy', 'warm'],
      ['one of its own voices', 'deep', 'deep'],
      ['no voice (its first own voice)', undefined, 'warm'],
      ['a null voice (as none: its first own voice)', null, 'warm'],
    ])('sends the upstream the model\'s own voice for %s', async (_, voice, sent) => {
      const res = await sdk(gw, key).audio.speech.create({ model: ALIASED.id, input: 'Hi.', ...(voice !== undefined ? { voice } : {}) } as any);
      expect(res.status).toBe(200);
      expect(fake.requests[0].body).toMatchObject({ model: 'tts-1', voice: sent });
    });

    it('streams the audio as it arrives: the first bytes come before the upstream has finished', async () => {
      fake.chunkDelayMs = 400;
      const started = Date.now();
      const res = await postSpeech(gw, key, { model: FAKE_TTS.id, input: 'Hello.' });
      const reader = res.body!.getReader();
      const first = await reader.read();
      const firstAt = Date.now() - started;
      expect(first.value!.length).toBeGreaterThan(0);
      let total = first.value!.length;
      for (let part = await reader.read(); !part.done; part = await reader.read()) total += part.value.length;
      const doneAt = Date.now() - started;
      expect(total).toBe(fake.speechAudio.length);
      expect(firstAt).toBeLessThan(400);
      expect(doneAt).toBeGreaterThanOrEqual(3 * 400);
    });

    it('records the input characters and the model in usage, with no cost', async () => {
      const account = await admin.createAccount({ subscription: 'active', creditsUsd: '1' });
      await (await postSpeech(gw, account.key, { model: FAKE_TTS.id, input: 'Héllo wörld 😀' })).arrayBuffer();
      const [row] = await audioUsageRows(db, account.accountId, 1);
      expect(row).toMatchObject({ model: FAKE_TTS.id, endpoint: '/v1/audio/speech', status: 200, error_code: null, input_chars: 13, cost_micros: '0' });
    });
  });

  describe('400s', () => {
    it.each([
      ['a body that is not JSON', '{"model": "fake-tts", '],
      ['an empty body', ''],
      ['a JSON array', '[1, 2]'],
      ['a JSON string', '"hello"'],
      ['JSON null', 'null'],
    ])('invalid_request_error for %s', async (_, body) => {
      const res = await postSpeech(gw, key, body);
      expect(await errorOf(res)).toMatchObject({ status: 400, code: 'invalid_request_error', type: 'invalid_request_error' });
      expect(fake.requests).toHaveLength(0);
    });

    it.each([
      ['no model', { input: 'Hi.' }],
      ['a null model', { model: null, input: 'Hi.' }],
      ['an empty model', { model: '', input: 'Hi.' }],
    ])('missing_model for %s', async (_, body) => {
      expect(await errorOf(await postSpeech(gw, key, body))).toMatchObject({ status: 400, code: 'missing_model', param: 'model' });
    });

    it.each([
      ['an unknown id', 'tts-9000'],
      ['a chat model', 'dev-echo'],
      ['a transcription model', 'fake-stt'],
    ])('unknown_model for %s', async (_, model) => {
      expect(await errorOf(await postSpeech(gw, key, { model, input: 'Hi.' }))).toMatchObject({ status: 400, code: 'unknown_model', param: 'model' });
    });

    it.each([
      ['no input', { model: FAKE_TTS.id }],
      ['a null input', { model: FAKE_TTS.id, input: null }],
    ])('missing_input for %s', async (_, body) => {
      expect(await errorOf(await postSpeech(gw, key, body))).toMatchObject({ status: 400, code: 'missing_input', param: 'input' });
    });

    it.each([
      ['an empty input', { input: '' }, 'input'],
      ['a numeric input', { input: 42 }, 'input'],
      ['an object input', { input: { text: 'hi' } }, 'input'],
      ['a voice the model does not offer', { input: 'Hi.', voice: 'nova' }, 'voice'],
      ['a numeric voice', { input: 'Hi.', voice: 7 }, 'voice'],
      ['an empty voice', { input: 'Hi.', voice: '' }, 'voice'],
      ['speed 4.01', { input: 'Hi.', speed: 4.01 }, 'speed'],
      ['speed 0.2', { input: 'Hi.', speed: 0.2 }, 'speed'],
      ['a string speed', { input: 'Hi.', speed: 'fast' }, 'speed'],
    ])('invalid_input for %s', async (_, fields, param) => {
      const res = await postSpeech(gw, key, { model: FAKE_TTS.id, ...fields });
      expect(await errorOf(res)).toMatchObject({ status: 400, code: 'invalid_input', param });
      expect(fake.requests).toHaveLength(0);
    });

    it.each([
      ['an alias of another model', 'nova'],
      ['an alias in another case', 'Onyx'],
      ['a name of Object.prototype', 'constructor'],
      ['__proto__', '__proto__'],
      ['5,000 characters (quoted cut short)', 'x'.repeat(5000)],
    ])('invalid_input for %s on a model with aliases, listing its voices and aliases', async (_, voice) => {
      const res = await postSpeech(gw, key, { model: ALIASED.id, input: 'Hi.', voice });
      const error = await errorOf(res);
      expect(error).toMatchObject({ status: 400, code: 'invalid_input', param: 'voice' });
      expect(error.message).toContain('voices: warm, deep; aliases: alloy, onyx');
      expect(error.message.length).toBeLessThan(200);
      expect(fake.requests).toHaveLength(0);
    });

    it('input_too_long one character over the configured maximum', async () => {
      const res = await postSpeech(gw, key, { model: FAKE_TTS.id, input: 'x'.repeat(MAX_CHARS + 1) });
      expect(await errorOf(res)).toMatchObject({ status: 400, code: 'input_too_long', param: 'input' });
    });

    it.each([
      ['an unknown format', FAKE_TTS.id, 'wma'],
      ['a non-string format', FAKE_TTS.id, 3],
      ['a format the model does not offer', MP3_ONLY, 'wav'],
    ])('unsupported_response_format for %s', async (_, model, format) => {
      const res = await postSpeech(gw, key, { model, input: 'Hi.', response_format: format });
      expect(await errorOf(res)).toMatchObject({ status: 400, code: 'unsupported_response_format', param: 'response_format' });
    });
  });

  describe('upstream failures', () => {
    it('passes an upstream 400 through as upstream_rejected with its message', async () => {
      fake.failureMessage = 'Voice not available for this account.';
      fake.failNext('status4xx');
      const res = await postSpeech(gw, key, { model: FAKE_TTS.id, input: 'Hi.' });
      expect(await errorOf(res)).toMatchObject({ status: 400, code: 'upstream_rejected', message: expect.stringContaining('Voice not available') });
    });

    it.each([
      ['a 500', 'status500'],
      ['a JSON answer instead of audio', 'malformedJson'],
      ['a reset connection', 'reset'],
    ] as const)('502 upstream_error for %s', async (_, mode) => {
      fake.failNext(mode);
      const res = await postSpeech(gw, key, { model: FAKE_TTS.id, input: 'Hi.' });
      expect(await errorOf(res)).toMatchObject({ status: 502, code: 'upstream_error', type: 'api_error' });
    });

    it('breaks the response when the upstream fails mid-audio, records upstream_error, and gives the fair-use request back', async () => {
      const account = await admin.createAccount({ subscription: 'active' });
      fake.failNext('midStreamFailure');
      const res = await postSpeech(gw, account.key, { model: FAKE_TTS.id, input: 'Hi.' });
      expect(res.status).toBe(200);
      await expect(res.arrayBuffer()).rejects.toThrow();
      const [row] = await audioUsageRows(db, account.accountId, 1);
      expect(row).toMatchObject({ endpoint: '/v1/audio/speech', error_code: 'upstream_error' });
      await expectFairUse(db, account.accountId, 0);
    });

    it('aborts the upstream request when the client goes away, and gives the fair-use request back', async () => {
      const account = await admin.createAccount({ subscription: 'active' });
      fake.chunkDelayMs = 500;
      const res = await postSpeech(gw, account.key, { model: FAKE_TTS.id, input: 'Hi.' });
      const reader = res.body!.getReader();
      await reader.read();
      await reader.cancel();
      await fake.waitFor(() => fake.aborted().length === 1);
      await expectFairUse(db, account.accountId, 0);
      const [row] = await audioUsageRows(db, account.accountId, 1);
      expect(row).toMatchObject({ endpoint: '/v1/audio/speech', status: 499 });
    });
  });
});

describe('POST /v1/audio/speech: OpenAI voice names on the shipped local-tts (espeak-ng)', () => {
  let gw: TestApp, key: string;
  beforeAll(async () => {
    gw = await startTestApp(); // config/gateway.yaml as shipped
    ({ key } = await new AdminClient(gw.url).createAccount({ subscription: 'trial' }));
  });
  afterAll(() => gw?.close());

  async function spoken(voice?: string): Promise<Buffer> {
    const res = await sdk(gw, key).audio.speech.create({ model: 'local-tts', input: 'Hello from the gateway.', ...(voice ? { voice } : {}) } as any);
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    return Buffer.from(await res.arrayBuffer());
  }

  it('speaks every OpenAI voice name through the SDK, each in a voice of its own', async () => {
    const audio = new Map<string, string>();
    for (const voice of OPENAI_VOICES) {
      const mp3 = await spoken(voice);
      expect(mp3.length).toBeGreaterThan(1000);
      audio.set(voice, mp3.toString('base64'));
    }
    expect(new Set(audio.values()).size).toBe(OPENAI_VOICES.length);
  });

  it('keeps the default voice when none is sent: the first own voice, en-us', async () => {
    expect(await spoken()).toEqual(await spoken('en-us'));
    expect(await spoken()).not.toEqual(await spoken('alloy'));
  });

  it.each(['nova-2', 'en-us+f9', '--help', '-v'])('answers the unknown voice %s with 400 invalid_input listing the accepted names', async (voice) => {
    const error = await errorOf(await postSpeech(gw, key, { model: 'local-tts', input: 'Hi.', voice }));
    expect(error).toMatchObject({ status: 400, code: 'invalid_input', param: 'voice' });
    expect(error.message).toContain('voices: en-us, en-gb, en, en-us+f1');
    expect(error.message).toContain(`aliases: ${OPENAI_VOICES.join(', ')}`);
  });
});
