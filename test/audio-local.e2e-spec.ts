import { toFile } from 'openai';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { audioFixture, audioForm, audioUsageRows, errorOf, postSpeech, postTranscription, sdk } from './support/audio-support';
import { expectValidAgainst } from './support/openapi';
import { startTestApp, TestApp } from './support/test-app';

/** Words that espeak-ng speaks and pocketsphinx (en-us) hears back reliably. */
const SENTENCE = 'The stock market went up today. The meeting is scheduled for next week.';
const KEY_WORDS = ['stock', 'market', 'scheduled', 'next', 'week'];

const words = (text: string) => text.toLowerCase().match(/[a-z']+/g) ?? [];

describe('local speech engines (espeak-ng, pocketsphinx, ffmpeg) through the gateway', () => {
  let gw: TestApp;
  let admin: AdminClient;
  let db: DataSource;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    gw = await startTestApp(); // config/gateway.yaml as shipped: local-tts and local-stt
    admin = new AdminClient(gw.url);
    db = gw.app.get(DataSource);
    ({ key, accountId } = await admin.createAccount({ subscription: 'trial' }));
  });
  afterAll(() => gw.close());

  async function speech(body: Record<string, unknown>): Promise<{ contentType: string | null; audio: Buffer }> {
    const res = await postSpeech(gw, key, { model: 'local-tts', ...body });
    expect(res.status).toBe(200);
    return { contentType: res.headers.get('content-type'), audio: Buffer.from(await res.arrayBuffer()) };
  }

  it('round trip: speech of an English sentence, then its transcription, recovers most of its words', async () => {
    const client = sdk(gw, key);
    const spoken = await client.audio.speech.create({ model: 'local-tts', input: SENTENCE, voice: 'en-us', response_format: 'wav' } as any);
    expect(spoken.headers.get('content-type')).toBe('audio/wav');
    const wav = Buffer.from(await spoken.arrayBuffer());
    expect(wav.subarray(0, 4).toString('latin1')).toBe('RIFF');

    const result: any = await client.audio.transcriptions.create({
      file: await toFile(wav, 'speech.wav', { type: 'audio/wav' }),
      model: 'whisper-1',
      response_format: 'verbose_json',
    });
    expectValidAgainst('CreateTranscriptionResponseVerboseJson', result);
    const heard = new Set(words(result.text));
    for (const word of KEY_WORDS) expect(heard).toContain(word);
    const said = [...new Set(words(SENTENCE))];
    expect(said.filter((w) => heard.has(w)).length / said.length).toBeGreaterThan(0.6);
    expect(result.language).toBe('english');
    expect(result.duration).toBeGreaterThan(3);
    expect(result.duration).toBeLessThan(8);
    expect(result.segments.length).toBeGreaterThan(0);

    const rows = await audioUsageRows(db, accountId, 2);
    const byEndpoint = Object.fromEntries(rows.map((r) => [r.endpoint, r]));
    expect(byEndpoint['/v1/audio/speech']).toMatchObject({ model: 'local-tts', status: 200, input_chars: SENTENCE.length });
    expect(byEndpoint['/v1/audio/transcriptions']).toMatchObject({ model: 'local-stt', status: 200 });
    expect(Number(byEndpoint['/v1/audio/transcriptions'].audio_seconds)).toBeCloseTo(result.duration, 3);
  });

  it.each(['hello.wav', 'hello.mp3', 'hello.flac', 'hello.ogg', 'hello.m4a', 'hello.webm'])('transcribes %s', async (name) => {
    const res = await postTranscription(gw, key, audioForm({ response_format: 'json' }, { data: audioFixture(name), name }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ text: 'hello world' });
  });

  it('answers text with the plain transcript', async () => {
    const res = await postTranscription(gw, key, audioForm({ response_format: 'text' }, { data: audioFixture('hello.wav'), name: 'hello.wav' }));
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toBe('hello world');
  });

  it.each([
    ['mp3', 'audio/mpeg', (b: Buffer) => b.subarray(0, 3).toString('latin1') === 'ID3' || (b[0] === 0xff && (b[1] & 0xe0) === 0xe0)],
    ['opus', 'audio/ogg', (b: Buffer) => b.subarray(0, 4).toString('latin1') === 'OggS' && b.includes('OpusHead')],
    ['aac', 'audio/aac', (b: Buffer) => b[0] === 0xff && (b[1] & 0xf6) === 0xf0],
    ['flac', 'audio/flac', (b: Buffer) => b.subarray(0, 4).toString('latin1') === 'fLaC'],
    ['wav', 'audio/wav', (b: Buffer) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WAVE'],
    // Raw 24 kHz mono 16-bit samples: no header, an even length, about a second for "Hello world."
    ['pcm', 'audio/pcm', (b: Buffer) => b.length % 2 === 0 && b.length > 24_000 && b.length < 4 * 48_000],
  ] as const)('speaks %s as %s', async (format, contentType, looksRight) => {
    const { contentType: received, audio } = await speech({ input: 'Hello world.', response_format: format });
    expect(received).toBe(contentType);
    expect(looksRight(audio)).toBe(true);
  });

  it('speaks faster at speed 2 and slower at speed 0.5', async () => {
    const normal = (await speech({ input: 'One two three four five six.', response_format: 'pcm' })).audio.length;
    const fast = (await speech({ input: 'One two three four five six.', response_format: 'pcm', speed: 2 })).audio.length;
    const slow = (await speech({ input: 'One two three four five six.', response_format: 'pcm', speed: 0.5 })).audio.length;
    expect(fast).toBeLessThan(normal * 0.7);
    expect(slow).toBeGreaterThan(normal * 1.4);
  });

  it('uses the voice asked for, and refuses one the model does not list', async () => {
    const us = (await speech({ input: 'Tomato.', voice: 'en-us', response_format: 'pcm' })).audio;
    const gb = (await speech({ input: 'Tomato.', voice: 'en-gb', response_format: 'pcm' })).audio;
    expect(us.equals(gb)).toBe(false);
    expect(await errorOf(await postSpeech(gw, key, { model: 'local-tts', input: 'Hi.', voice: 'klingon' }))).toMatchObject({
      status: 400,
      code: 'invalid_input',
      param: 'voice',
    });
  });

  it('reads the input as text, never as options or markup', async () => {
    const { audio } = await speech({ input: '--version -v xx <speak>hi</speak>', response_format: 'wav' });
    expect(audio.length).toBeGreaterThan(10_000);
  });

  it('answers 400 upstream_rejected for a file that looks like WAV but does not decode', async () => {
    const broken = Buffer.concat([Buffer.from('RIFF\x24\x00\x00\x00WAVEjunk', 'latin1'), Buffer.alloc(64, 7)]);
    const res = await postTranscription(gw, key, audioForm({}, { data: broken, name: 'broken.wav' }));
    expect(await errorOf(res)).toMatchObject({ status: 400, code: 'upstream_rejected', message: expect.stringContaining('could not be decoded') });
  });

  describe('when an engine is not installed', () => {
    let binDir: string;
    let savedPath: string | undefined;

    beforeEach(() => {
      binDir = mkdtempSync(join(tmpdir(), 'gateway-bin-'));
      savedPath = process.env.PATH;
    });
    afterEach(() => {
      process.env.PATH = savedPath;
      rmSync(binDir, { recursive: true, force: true });
    });

    /** PATH holds only the named binaries (the child processes inherit this process's PATH). */
    function onlyOnPath(...binaries: string[]): void {
      for (const binary of binaries) symlinkSync(`/usr/bin/${binary}`, join(binDir, binary));
      process.env.PATH = binDir;
    }

    it('speech answers 502 upstream_error naming espeak-ng', async () => {
      onlyOnPath('ffmpeg');
      const error = await errorOf(await postSpeech(gw, key, { model: 'local-tts', input: 'Hello.' }));
      expect(error).toMatchObject({ status: 502, code: 'upstream_error' });
      expect(error.message).toContain('Debian package espeak-ng');
    });

    it('speech answers 502 upstream_error naming ffmpeg', async () => {
      onlyOnPath('espeak-ng');
      const error = await errorOf(await postSpeech(gw, key, { model: 'local-tts', input: 'Hello.' }));
      expect(error).toMatchObject({ status: 502, code: 'upstream_error' });
      expect(error.message).toContain('Debian package ffmpeg');
    });

    it('transcription answers 502 upstream_error naming pocketsphinx', async () => {
      onlyOnPath('ffmpeg');
      const error = await errorOf(await postTranscription(gw, key, audioForm({}, { data: audioFixture('hello.wav'), name: 'hello.wav' })));
      expect(error).toMatchObject({ status: 502, code: 'upstream_error' });
      expect(error.message).toContain('Debian package pocketsphinx');
    });

    it('transcription answers 502 upstream_error naming ffmpeg', async () => {
      onlyOnPath('pocketsphinx_continuous');
      const error = await errorOf(await postTranscription(gw, key, audioForm({}, { data: audioFixture('hello.wav'), name: 'hello.wav' })));
      expect(error).toMatchObject({ status: 502, code: 'upstream_error' });
      expect(error.message).toContain('Debian package ffmpeg');
    });
  });
});
