import { toFile } from 'openai';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { audioFixture, audioUsageRows, errorOf, postSpeech, sdk } from './support/audio-support';
import { FAKE_OPENAI_KEY, FAKE_OPENAI_KEY_ENV, FakeUpstream, startFakeUpstream } from './support/fake-upstream';
import { TestApp } from './support/test-app';
import { keyedProvider, useUpstreamGateway } from './support/upstream-gateway';

/**
 * Transcription and speech on a provider of `type: openai` (issue 46: "chat, transcription and speech as
 * openai-compatible"): the same requests reach the fake OpenAI's /v1/audio/transcriptions and /v1/audio/speech, with the
 * provider's key as a bearer token, and its answers come back through the official `openai` SDK. A key OpenAI does not
 * take is its 401, which the client sees as the gateway's 502 upstream_error.
 */
const STT = { id: 'openai-stt', upstream: 'gpt-4o-transcribe' };
const TTS = { id: 'openai-tts', upstream: 'gpt-4o-mini-tts' };

describe('transcription and speech on an `openai` provider', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  useUpstreamGateway({
    fakes: async () => ({ fake: await startFakeUpstream() }),
    config: (fakes, raw) => {
      raw.providers.openai = keyedProvider('openai', fakes.fake.url, FAKE_OPENAI_KEY_ENV, FAKE_OPENAI_KEY);
      // One transcription model is active at a time: OpenAI's, here.
      for (const entry of raw.catalog) if (entry.kind === 'transcription') entry.active = false;
      raw.catalog.push({ id: STT.id, kind: 'transcription', provider: 'openai', upstream_model: STT.upstream, active: true });
      raw.catalog.push({ id: TTS.id, kind: 'speech', provider: 'openai', upstream_model: TTS.upstream, voices: ['alloy', 'coral'] });
    },
    ready: (suite) => ({ fakes: { fake }, gw, admin, db } = suite),
  });

  it('transcribes through the SDK: the upload reaches /v1/audio/transcriptions with the bearer key and the upstream model', async () => {
    const { accountId, key } = await admin.createAccount({ subscription: 'active' });
    const wav = audioFixture('hello.wav');
    const result = await sdk(gw, key).audio.transcriptions.create({ file: await toFile(wav, 'hello.wav', { type: 'audio/wav' }), model: 'whisper-1' });
    expect(result).toEqual({ text: 'Hello world.' });
    expect(fake.requests).toHaveLength(1);
    const [sent] = fake.requests;
    expect([sent.method, sent.path, sent.headers.authorization]).toEqual(['POST', '/v1/audio/transcriptions', `Bearer ${FAKE_OPENAI_KEY}`]);
    expect(sent.fields).toMatchObject({ model: STT.upstream, response_format: 'verbose_json' });
    expect(sent.file).toEqual({ filename: 'hello.wav', type: 'audio/wav', size: wav.length });
    const [row] = await audioUsageRows(db, accountId, 1);
    expect(row).toMatchObject({ model: STT.id, endpoint: '/v1/audio/transcriptions', status: 200, error_code: null });
  });

  it('speaks through the SDK: the text reaches /v1/audio/speech with the bearer key, the audio comes back as sent', async () => {
    const { accountId, key } = await admin.createAccount({ subscription: 'active' });
    const res = await sdk(gw, key).audio.speech.create({ model: TTS.id, input: 'Héllo there.', voice: 'coral', response_format: 'wav' });
    expect(res.headers.get('content-type')).toBe('audio/wav');
    expect(Buffer.from(await res.arrayBuffer())).toEqual(fake.speechAudio);
    expect(fake.requests).toHaveLength(1);
    const [sent] = fake.requests;
    expect([sent.method, sent.path, sent.headers.authorization]).toEqual(['POST', '/v1/audio/speech', `Bearer ${FAKE_OPENAI_KEY}`]);
    expect(sent.body).toEqual({ model: TTS.upstream, input: 'Héllo there.', voice: 'coral', response_format: 'wav', speed: 1 });
    const [row] = await audioUsageRows(db, accountId, 1);
    expect(row).toMatchObject({ model: TTS.id, endpoint: '/v1/audio/speech', status: 200, input_chars: 12 });
  });

  it('fails both with 502 upstream_error when OpenAI does not take the key (its 401), having sent it', async () => {
    const { key } = await admin.createAccount({ subscription: 'active' });
    fake.apiKey = 'sk-another-0123456789abcdefghij';
    const form = new FormData();
    form.append('file', new Blob([audioFixture('hello.wav')], { type: 'audio/wav' }), 'hello.wav');
    const transcription = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(await errorOf(transcription)).toMatchObject({ status: 502, code: 'upstream_error' });
    expect(await errorOf(await postSpeech(gw, key, { model: TTS.id, input: 'Hi.' }))).toMatchObject({ status: 502, code: 'upstream_error' });
    expect(fake.requests.map((r) => [r.path, r.headers.authorization])).toEqual([
      ['/v1/audio/transcriptions', `Bearer ${FAKE_OPENAI_KEY}`],
      ['/v1/audio/speech', `Bearer ${FAKE_OPENAI_KEY}`],
    ]);
  });
});
