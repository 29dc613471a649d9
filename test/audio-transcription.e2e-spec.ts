import { toFile } from 'openai';
import { request as httpRequest } from 'node:http';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import {
  audioFixture,
  audioForm,
  audioUsageRows,
  creditsOf,
  errorOf,
  expectFairUse,
  FAKE_STT,
  postTranscription,
  sdk,
  withFakeAudioProvider,
} from './support/audio-support';
import { parseSseData } from './support/chat-support';
import { FakeUpstream, startFakeUpstream, unusedPortUrl } from './support/fake-upstream';
import { expectValidAgainst } from './support/openapi';
import { startTestApp, TestApp } from './support/test-app';

const REQUEST_MS = 500;
const MAX_BYTES = 4 * 1024 * 1024;

describe('POST /v1/audio/transcriptions (openai-compatible upstream)', () => {
  let fake: FakeUpstream;
  let gw: TestApp;
  let refused: TestApp;
  let admin: AdminClient;
  let db: DataSource;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    fake = await startFakeUpstream();
    gw = await startTestApp({ config: withFakeAudioProvider(fake.url, { requestMs: REQUEST_MS }) });
    refused = await startTestApp({ config: withFakeAudioProvider(await unusedPortUrl(), { requestMs: REQUEST_MS }) });
    admin = new AdminClient(gw.url);
    db = gw.app.get(DataSource);
    ({ key, accountId } = await admin.createAccount({ subscription: 'active' }));
  });
  afterAll(async () => {
    await refused.close();
    await gw.close();
    await fake.close();
  });
  beforeEach(() => fake.resetState());

  const hello = () => ({ data: audioFixture('hello.wav'), name: 'hello.wav', type: 'audio/wav' });

  describe('success', () => {
    it('serves "whisper-1" with the active model: the upstream receives its configured upstream model and is asked for verbose_json', async () => {
      const result = await sdk(gw, key).audio.transcriptions.create({
        file: await toFile(audioFixture('hello.wav'), 'hello.wav', { type: 'audio/wav' }),
        model: 'whisper-1',
      });
      expect(result).toEqual({ text: 'Hello world.' });
      expectValidAgainst('CreateTranscriptionResponseJson', result);
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0].path).toBe('/v1/audio/transcriptions');
      expect(fake.requests[0].fields).toMatchObject({ model: FAKE_STT.upstream, response_format: 'verbose_json' });
      expect(fake.requests[0].file).toEqual({ filename: 'hello.wav', type: 'audio/wav', size: audioFixture('hello.wav').length });
    });

    it('accepts a request without model, and passes the language hint on', async () => {
      const res = await postTranscription(gw, key, audioForm({ language: 'en' }, hello()));
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ text: 'Hello world.' });
      expect(fake.requests[0].fields).toMatchObject({ model: FAKE_STT.upstream, language: 'en' });
    });

    it('answers text as text/plain, the transcript untouched', async () => {
      fake.transcription = { ...FakeUpstream.defaultTranscription(), text: '  Umm, hello   World!! ' };
      const res = await postTranscription(gw, key, audioForm({ model: 'whisper-1', response_format: 'text' }, hello()));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await res.text()).toBe('  Umm, hello   World!! ');
    });

    it('answers verbose_json with the model\'s language, duration, text and segments', async () => {
      const result: any = await sdk(gw, key).audio.transcriptions.create({
        file: await toFile(audioFixture('hello.mp3'), 'hello.mp3'),
        model: 'whisper-1',
        response_format: 'verbose_json',
      });
      const expected = FakeUpstream.defaultTranscription();
      expect(result).toEqual({ language: expected.language, duration: expected.duration, text: expected.text, segments: expected.segments });
      expectValidAgainst('CreateTranscriptionResponseVerboseJson', result);
    });

    it('answers json with content type application/json', async () => {
      const res = await postTranscription(gw, key, audioForm({ response_format: 'json' }, hello()));
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({ text: 'Hello world.' });
    });

    it.each([
      ['hello.wav', 'a.wav'],
      ['hello.mp3', 'a.mp3'],
      ['hello.mp3', 'a.mpga'],
      ['hello.mp3', 'a.mpeg'],
      ['hello.flac', 'a.FLAC'],
      ['hello.ogg', 'a.ogg'],
      ['hello.ogg', 'a.oga'],
      ['hello.m4a', 'a.m4a'],
      ['hello.m4a', 'a.mp4'],
      ['hello.webm', 'a.webm'],
    ])('accepts %s uploaded as %s', async (fixture, name) => {
      const res = await postTranscription(gw, key, audioForm({}, { data: audioFixture(fixture), name }));
      expect(res.status).toBe(200);
      expect(fake.requests[0].file?.filename).toBe(name);
    });

    it('records the audio seconds and the active model in usage, and charges nothing', async () => {
      const account = await admin.createAccount({ subscription: 'active', creditsUsd: '1' });
      fake.transcription = { ...FakeUpstream.defaultTranscription(), duration: 7.25 };
      const res = await postTranscription(gw, account.key, audioForm({ model: 'whisper-1' }, hello()));
      expect(res.status).toBe(200);
      const [row] = await audioUsageRows(db, account.accountId, 1);
      expect(row).toMatchObject({ model: FAKE_STT.id, endpoint: '/v1/audio/transcriptions', status: 200, error_code: null, audio_seconds: '7.250', cost_micros: '0' });
      const usage = await admin.usage(account.accountId);
      expect(usage.totals).toMatchObject({ requests: 1, audio_seconds: 7.25, cost_usd: '0.000000' });
    });

    it('takes the duration from the last segment when the upstream gives none', async () => {
      const account = await admin.createAccount({ subscription: 'active' });
      const { duration: _omitted, ...withoutDuration } = FakeUpstream.defaultTranscription();
      fake.transcription = { ...withoutDuration, segments: [{ id: 0, start: 0, end: 3.5, text: 'x' }] } as any;
      const res = await postTranscription(gw, account.key, audioForm({ response_format: 'verbose_json' }, hello()));
      expect(await res.json()).toMatchObject({ duration: 3.5 });
      const [row] = await audioUsageRows(db, account.accountId, 1);
      expect(row.audio_seconds).toBe('3.500');
    });
  });

  describe('stream: true', () => {
    const file = () => toFile(audioFixture('hello.wav'), 'hello.wav', { type: 'audio/wav' });

    it("streams OpenAI's transcription events through the SDK: a delta per word, then done with the whole text", async () => {
      fake.transcription = { ...FakeUpstream.defaultTranscription(), text: 'The stock market went up today.' };
      const client = sdk(gw, key);
      const whole = await client.audio.transcriptions.create({ file: await file(), model: 'whisper-1' });
      const stream = await client.audio.transcriptions.create({ file: await file(), model: 'whisper-1', stream: true });
      const events: any[] = [];
      for await (const event of stream) events.push(event);

      const deltas = events.slice(0, -1);
      expect(deltas.map((e) => e.delta)).toEqual(['The ', 'stock ', 'market ', 'went ', 'up ', 'today.']);
      for (const delta of deltas) {
        expect(Object.keys(delta).sort()).toEqual(['delta', 'type']);
        expect(delta.type).toBe('transcript.text.delta');
        expectValidAgainst('TranscriptTextDeltaEvent', delta);
      }
      expect(events.at(-1)).toEqual({ type: 'transcript.text.done', text: whole.text });
      expectValidAgainst('TranscriptTextDoneEvent', events.at(-1));
      // The upstream is asked as for any transcription (verbose_json, for the duration).
      expect(fake.requests[1].fields).toMatchObject({ model: FAKE_STT.upstream, response_format: 'verbose_json' });
    });

    it('answers text/event-stream with data-only events, and keeps the text exact (spaces and all) for text as for json', async () => {
      fake.transcription = { ...FakeUpstream.defaultTranscription(), text: '  Umm, hello   World!! ' };
      for (const format of ['json', 'text', undefined]) {
        const res = await postTranscription(gw, key, audioForm({ stream: 'true', ...(format ? { response_format: format } : {}) }, hello()));
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
        const body = await res.text();
        expect(body).not.toMatch(/^event:/m);
        expect(body.endsWith('\n\n')).toBe(true);
        const events = parseSseData(body).map((data) => JSON.parse(data));
        expect(events).toEqual([
          { type: 'transcript.text.delta', delta: '  Umm, ' },
          { type: 'transcript.text.delta', delta: 'hello   ' },
          { type: 'transcript.text.delta', delta: 'World!! ' },
          { type: 'transcript.text.done', text: '  Umm, hello   World!! ' },
        ]);
      }
    });

    it('sends one empty delta, then done, for a transcript without words', async () => {
      fake.transcription = { ...FakeUpstream.defaultTranscription(), text: '' };
      const res = await postTranscription(gw, key, audioForm({ stream: 'true' }, hello()));
      expect(parseSseData(await res.text()).map((data) => JSON.parse(data))).toEqual([
        { type: 'transcript.text.delta', delta: '' },
        { type: 'transcript.text.done', text: '' },
      ]);
    });

    it('takes stream as text in any case (True from Python requests), and false as no stream', async () => {
      const streamed = await postTranscription(gw, key, audioForm({ stream: 'True' }, hello()));
      expect(streamed.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      await streamed.text();
      const plain = await postTranscription(gw, key, audioForm({ stream: 'false' }, hello()));
      expect(plain.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await plain.json()).toEqual({ text: 'Hello world.' });
    });

    it('refuses verbose_json with stream true: 400 invalid_response_format, before any upstream call', async () => {
      const err: any = await sdk(gw, key)
        .audio.transcriptions.create({ file: await file(), model: 'whisper-1', response_format: 'verbose_json', stream: true })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect({ status: err.status, code: err.code, param: err.param, type: err.type }).toEqual({
        status: 400,
        code: 'invalid_response_format',
        param: 'response_format',
        type: 'invalid_request_error',
      });
      expect(err.message).toContain('"verbose_json" cannot be streamed');
      expect(fake.requests).toHaveLength(0);
    });

    it.each(['yes', '1', ''])('refuses stream "%s": 400 invalid_request_error naming stream', async (value) => {
      const res = await postTranscription(gw, key, audioForm({ stream: value }, hello()));
      expect(await errorOf(res)).toMatchObject({ status: 400, code: 'invalid_request_error', param: 'stream', type: 'invalid_request_error' });
      expect(fake.requests).toHaveLength(0);
    });

    it('answers failures before the stream as JSON errors: an upstream 500 is 502 upstream_error, recorded', async () => {
      const account = await admin.createAccount({ subscription: 'active' });
      fake.failNext('status500');
      const res = await postTranscription(gw, account.key, audioForm({ stream: 'true' }, hello()));
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await errorOf(res)).toMatchObject({ status: 502, code: 'upstream_error' });
      const [row] = await audioUsageRows(db, account.accountId, 1);
      expect(row).toMatchObject({ model: FAKE_STT.id, status: 502, error_code: 'upstream_error', streamed: true });
    });

    it('refuses an account without subscription with 402 subscription_required as JSON, before reading the upload', async () => {
      const account = await admin.createAccount();
      const res = await postTranscription(gw, account.key, audioForm({ stream: 'true' }, hello()));
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await errorOf(res)).toMatchObject({ status: 402, code: 'subscription_required' });
      expect(fake.requests).toHaveLength(0);
    });

    it('records a streamed call as a transcription: the active model, its audio seconds, streamed, no cost; one fair-use request', async () => {
      const account = await admin.createAccount({ subscription: 'active', creditsUsd: '1' });
      fake.transcription = { ...FakeUpstream.defaultTranscription(), duration: 4.5 };
      const res = await postTranscription(gw, account.key, audioForm({ model: 'whisper-1', stream: 'true' }, hello()));
      expect(res.status).toBe(200);
      await res.text();
      const [row] = await audioUsageRows(db, account.accountId, 1);
      expect(row).toMatchObject({ model: FAKE_STT.id, endpoint: '/v1/audio/transcriptions', status: 200, error_code: null, audio_seconds: '4.500', streamed: true, cost_micros: '0' });
      await expectFairUse(db, account.accountId, 1);
      expect(await creditsOf(db, account.accountId)).toMatchObject({ balance: '1000000', reserved: '0' });
    });
  });

  describe('400s', () => {
    it('missing_file when the form has no file field', async () => {
      const res = await postTranscription(gw, key, audioForm({ model: 'whisper-1' }));
      expect(await errorOf(res)).toMatchObject({ status: 400, code: 'missing_file', param: 'file', type: 'invalid_request_error' });
      expect(fake.requests).toHaveLength(0);
    });

    it('missing_file when "file" is sent as a text field', async () => {
      const res = await postTranscription(gw, key, audioForm({ file: 'hello.wav' }));
      expect(await errorOf(res)).toMatchObject({ status: 400, code: 'missing_file' });
    });

    it.each([
      ['a body that is not multipart (JSON)', 'application/json', '{"file": "x"}'],
      ['a multipart body without its boundary', 'multipart/form-data', '--x\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--x--\r\n'],
      ['a multipart body cut short', 'multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nRIFF'],
      ['a multipart body with a malformed part header', 'multipart/form-data; boundary=x', '--x\r\nthis is not a header\r\n\r\nRIFF\r\n--x--\r\n'],
    ])('invalid_upload for %s', async (_, contentType, body) => {
      const res = await fetch(`${gw.url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
        body,
      });
      expect(await errorOf(res)).toMatchObject({ status: 400, code: 'invalid_upload', type: 'invalid_request_error' });
      expect(fake.requests).toHaveLength(0);
    });

    it('invalid_upload for two files', async () => {
      const form = audioForm({}, hello());
      form.append('file', new Blob([audioFixture('hello.wav')]), 'second.wav');
      expect(await errorOf(await postTranscription(gw, key, form))).toMatchObject({ status: 400, code: 'invalid_upload' });
    });

    it.each([
      ['a text file', Buffer.from('just some text, not audio'), 'notes.txt'],
      ['text content named .wav', Buffer.from('just some text, not audio'), 'notes.wav'],
      ['WAV content named .txt', audioFixture('hello.wav'), 'hello.txt'],
      ['WAV content without an extension', audioFixture('hello.wav'), 'hello'],
      ['a PNG named .mp3', Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), 'image.mp3'],
      ['an empty file', Buffer.alloc(0), 'empty.wav'],
    ])('unsupported_file_format for %s', async (_, data, name) => {
      const res = await postTranscription(gw, key, audioForm({}, { data, name }));
      expect(await errorOf(res)).toMatchObject({ status: 400, code: 'unsupported_file_format', param: 'file' });
      expect(fake.requests).toHaveLength(0);
    });

    it.each(['srt', 'vtt', 'xml', ''])('invalid_response_format for "%s"', async (format) => {
      const res = await postTranscription(gw, key, audioForm({ response_format: format }, hello()));
      expect(await errorOf(res)).toMatchObject({ status: 400, code: 'invalid_response_format', param: 'response_format' });
      expect(fake.requests).toHaveLength(0);
    });
  });

  describe('413', () => {
    it('payload_too_large for a file one byte over 4 MB (declared length: refused before reading)', async () => {
      const big = Buffer.concat([audioFixture('hello.wav'), Buffer.alloc(MAX_BYTES + 1 - audioFixture('hello.wav').length)]);
      const res = await postTranscription(gw, key, audioForm({}, { data: big, name: 'big.wav' }));
      expect(await errorOf(res)).toMatchObject({ status: 413, code: 'payload_too_large' });
      expect(fake.requests).toHaveLength(0);
    });

    it('accepts a file of exactly 4 MB', async () => {
      const wav = audioFixture('hello.wav');
      const exact = Buffer.concat([wav, Buffer.alloc(MAX_BYTES - wav.length)]);
      const res = await postTranscription(gw, key, audioForm({}, { data: exact, name: 'exact.wav' }));
      expect(res.status).toBe(200);
      expect(fake.requests[0].file?.size).toBe(MAX_BYTES);
    });

    it('payload_too_large for a chunked upload (no declared length) whose file grows past 4 MB', async () => {
      const boundary = 'b0undary';
      const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
      const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
      const result = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(`${gw.url}/v1/audio/transcriptions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' },
        });
        req.on('response', (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        });
        req.on('error', reject);
        req.write(head);
        req.write(audioFixture('hello.wav'));
        const chunk = Buffer.alloc(64 * 1024);
        for (let sent = 0; sent < 5 * 1024 * 1024; sent += chunk.length) req.write(chunk);
        req.end(tail);
      });
      expect(result.status).toBe(413);
      expect(JSON.parse(result.body).error.code).toBe('payload_too_large');
      expect(fake.requests).toHaveLength(0);
    });
  });

  describe('upstream failures', () => {
    it('504 upstream_unavailable when the upstream refuses connections', async () => {
      const res = await postTranscription(refused, key, audioForm({}, hello()));
      expect(await errorOf(res)).toMatchObject({ status: 504, code: 'upstream_unavailable', type: 'api_error' });
    });

    it('504 upstream_timeout when the upstream does not answer within the configured timeout', async () => {
      fake.failNext('hang');
      const started = Date.now();
      const res = await postTranscription(gw, key, audioForm({}, hello()));
      expect(await errorOf(res)).toMatchObject({ status: 504, code: 'upstream_timeout' });
      expect(Date.now() - started).toBeLessThan(REQUEST_MS + 2000);
    });

    it('502 upstream_error for an upstream 500', async () => {
      fake.failNext('status500');
      expect(await errorOf(await postTranscription(gw, key, audioForm({}, hello())))).toMatchObject({ status: 502, code: 'upstream_error' });
    });

    it('502 upstream_error for malformed JSON', async () => {
      fake.failNext('malformedJson');
      expect(await errorOf(await postTranscription(gw, key, audioForm({}, hello())))).toMatchObject({ status: 502, code: 'upstream_error' });
    });

    it('502 upstream_error for a connection reset, and for one broken mid-answer', async () => {
      fake.failNext('reset');
      expect(await errorOf(await postTranscription(gw, key, audioForm({}, hello())))).toMatchObject({ status: 502, code: 'upstream_error' });
      fake.failNext('midStreamFailure');
      expect(await errorOf(await postTranscription(gw, key, audioForm({}, hello())))).toMatchObject({ status: 502, code: 'upstream_error' });
    });

    it('passes an upstream 400 through as upstream_rejected with its message', async () => {
      fake.failureMessage = 'Audio file is too short. Minimum audio length is 0.1 seconds.';
      fake.failNext('status4xx');
      const err: any = await sdk(gw, key)
        .audio.transcriptions.create({ file: await toFile(audioFixture('hello.wav'), 'hello.wav'), model: 'whisper-1' })
        .catch((e) => e);
      expect(err.status).toBe(400);
      expect(err.code).toBe('upstream_rejected');
      expect(err.message).toContain('Audio file is too short.');
    });

    it('records failed calls in usage with their status and code', async () => {
      const account = await admin.createAccount({ subscription: 'active' });
      fake.failNext('status500');
      await postTranscription(gw, account.key, audioForm({}, hello()));
      const [row] = await audioUsageRows(db, account.accountId, 1);
      expect(row).toMatchObject({ model: FAKE_STT.id, status: 502, error_code: 'upstream_error', audio_seconds: '0.000', cost_micros: '0' });
    });
  });

  it('every call of this file appears in usage', async () => {
    const usage = await admin.usage(accountId);
    expect(usage.totals.requests).toBeGreaterThan(30);
    expect(usage.totals.cost_usd).toBe('0.000000');
  });
});
