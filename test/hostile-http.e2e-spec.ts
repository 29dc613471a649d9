import type { Socket } from 'node:net';
import type { Server } from 'node:http';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { audioFixture, audioForm, audioUsageRows, postTranscription, withFakeAudioProvider } from './support/audio-support';
import { FakeUpstream, startFakeUpstream } from './support/fake-upstream';
import { RawAnswer, RawClient, sleep } from './support/raw-client';
import { RawConfig, startTestApp, TestApp } from './support/test-app';

const MB = 1024 * 1024;
const MAX_BYTES = 4 * MB;
const BOUNDARY = 'h0stile';
const PART_HEAD = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`);

// The gateway with short timeouts, to see them fire within a test.
const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 3000;
const BODY_IDLE_TIMEOUT_MS = 1000;

function expectErrorAnswer(answer: RawAnswer, status: number, code: string, type = 'invalid_request_error'): void {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.headers['x-request-id']).toMatch(/^req_[0-9a-f]{24}$/);
  expect(answer.headers.connection).toBe('close');
  const body = JSON.parse(answer.body);
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error).toEqual({ message: expect.any(String), type, param: body.error.param ?? null, code });
}

/** The server side of each raw connection, to count what the gateway read. */
function serverSockets(gw: TestApp): Map<number, Socket> {
  const byClientPort = new Map<number, Socket>();
  (gw.app.getHttpServer() as Server).on('connection', (socket: Socket) => byClientPort.set(socket.remotePort!, socket));
  return byClientPort;
}

function uploadHead(key: string, framing: string): string {
  return (
    'POST /v1/audio/transcriptions HTTP/1.1\r\nHost: gateway\r\n' +
    `Authorization: Bearer ${key}\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\n${framing}\r\n\r\n`
  );
}

/** The multipart head and the start of the file, as one chunk of a chunked body. */
function chunkedPartHead(): Buffer {
  const first = Buffer.concat([PART_HEAD, audioFixture('hello.wav')]);
  return Buffer.concat([Buffer.from(`${first.length.toString(16)}\r\n`), first, Buffer.from('\r\n')]);
}

describe('Hostile HTTP: uploads stop at the limit, slow requests are cut, Node-level errors answer JSON', () => {
  let fake: FakeUpstream;
  let gw: TestApp;
  let short: TestApp;
  let admin: AdminClient;
  let db: DataSource;
  let gwSockets: Map<number, Socket>;

  beforeAll(async () => {
    fake = await startFakeUpstream();
    gw = await startTestApp({ config: withFakeAudioProvider(fake.url) });
    short = await startTestApp({
      config: (raw: RawConfig) => {
        withFakeAudioProvider(fake.url)(raw);
        raw.limits = { ...raw.limits, headers_timeout_ms: HEADERS_TIMEOUT_MS, request_timeout_ms: REQUEST_TIMEOUT_MS, body_idle_timeout_ms: BODY_IDLE_TIMEOUT_MS };
      },
    });
    admin = new AdminClient(gw.url);
    db = gw.app.get(DataSource);
    gwSockets = serverSockets(gw);
  });
  afterAll(async () => {
    await short?.close();
    await gw?.close();
    await fake?.close();
  });
  beforeEach(() => fake.resetState());

  const entitled = () => admin.createAccount({ subscription: 'trial' });

  describe('uploads past the limit are answered 413 when it is crossed, and the connection closed', () => {
    it('a chunked 50 MB upload: 413 payload_too_large before 5 MB have been read; the rest is never sent; a usage row', async () => {
      const { key, accountId } = await entitled();
      const client = new RawClient(gw.url);
      await client.write(uploadHead(key, 'Transfer-Encoding: chunked'));
      await client.write(chunkedPartHead());
      await client.stream(50 * MB, { chunked: true });
      const answer = await client.answer;
      await client.closed;

      expectErrorAnswer(answer, 413, 'payload_too_large');
      const read = gwSockets.get(client.localPort)!.bytesRead;
      expect(read).toBeLessThan(5 * MB);
      // What the client's socket took includes the kernel's buffers between the two ends (a few MB on loopback).
      expect(client.written).toBeLessThan(16 * MB);
      const rows = await audioUsageRows(db, accountId, 1);
      expect(rows).toEqual([expect.objectContaining({ endpoint: '/v1/audio/transcriptions', status: 413, error_code: 'payload_too_large' })]);
      expect(fake.requests).toHaveLength(0);
    });

    it('a declared Content-Length of 50 MB: 413 before the body is read, the connection closed', async () => {
      const { key, accountId } = await entitled();
      const client = new RawClient(gw.url);
      await client.write(uploadHead(key, `Content-Length: ${50 * MB}`));
      await client.write(PART_HEAD);
      await client.stream(50 * MB, { chunked: false });
      const answer = await client.answer;
      await client.closed;

      expectErrorAnswer(answer, 413, 'payload_too_large');
      expect(gwSockets.get(client.localPort)!.bytesRead).toBeLessThan(1 * MB);
      expect(client.written).toBeLessThan(16 * MB);
      expect(await audioUsageRows(db, accountId, 1)).toEqual([expect.objectContaining({ status: 413, error_code: 'payload_too_large' })]);
    });

    it('20 MB sent at about 2 MB/s: the 413 arrives as the 4 MB limit is crossed (within 3 s), not when the client is done', async () => {
      const { key } = await entitled();
      const client = new RawClient(gw.url);
      await client.write(uploadHead(key, 'Transfer-Encoding: chunked'));
      await client.write(chunkedPartHead());
      // 64 KiB every 31 ms: about 2 MB/s.
      await client.stream(20 * MB, { chunked: true, pauseMs: 31 });
      const answer = await client.answer;

      expectErrorAnswer(answer, 413, 'payload_too_large');
      expect(client.elapsedToAnswer()).toBeLessThan(3000);
      expect(client.written).toBeLessThan(5 * MB);
    });

    it('an upload refused before its body is read (402 subscription_required): answered at once, the body dropped up to the largest the gateway reads, then the connection closed', async () => {
      const { key } = await admin.createAccount({});
      const client = new RawClient(gw.url, { writeAfterAnswer: true });
      await client.write(uploadHead(key, 'Transfer-Encoding: chunked'));
      await client.write(chunkedPartHead());
      await client.stream(50 * MB, { chunked: true });
      const answer = await client.answer;
      await client.closed;

      expect(answer.status).toBe(402);
      expect(JSON.parse(answer.body).error.code).toBe('subscription_required');
      // Read and dropped up to limits.json_body_max_bytes (10 MiB, above the upload's 4 MiB and its form), then closed.
      const read = gwSockets.get(client.localPort)!.bytesRead;
      expect(read).toBeGreaterThan(10 * MB);
      expect(read).toBeLessThan(11 * MB);
      expect(client.answerCount()).toBe(1);
    });

    it('the connection of a 413 is closed, and the next connection is served normally', async () => {
      const { key } = await entitled();
      const res = await postTranscription(gw, key, audioForm({}, { data: audioFixture('hello.wav'), name: 'hello.wav', type: 'audio/wav' }));
      expect(res.status).toBe(200);
    });
  });

  describe('slow requests are cut at the configured timeouts', () => {
    it(`an upload that stalls gets 408 request_timeout after body_idle_timeout_ms (${BODY_IDLE_TIMEOUT_MS} ms), with a usage row`, async () => {
      const { key, accountId } = await entitled();
      const client = new RawClient(short.url);
      await client.write(uploadHead(key, 'Transfer-Encoding: chunked'));
      await client.write(chunkedPartHead());
      const answer = await client.answer;

      expectErrorAnswer(answer, 408, 'request_timeout');
      expect(client.elapsedToAnswer()).toBeGreaterThanOrEqual(BODY_IDLE_TIMEOUT_MS - 50);
      expect(client.elapsedToAnswer()).toBeLessThan(BODY_IDLE_TIMEOUT_MS + 1000);
      await client.closed;
      expect(await audioUsageRows(db, accountId, 1)).toEqual([expect.objectContaining({ status: 408, error_code: 'request_timeout' })]);
    });

    it(`a body trickling a few bytes per second is cut at request_timeout_ms (${REQUEST_TIMEOUT_MS} ms): 408 request_timeout, with a usage row`, async () => {
      const { key, accountId } = await entitled();
      const client = new RawClient(short.url);
      await client.write(uploadHead(key, 'Transfer-Encoding: chunked'));
      await client.write(chunkedPartHead());
      while (!client.answered && Date.now() - client.startedAt < REQUEST_TIMEOUT_MS + 5000) {
        await client.write('4\r\nabcd\r\n');
        await sleep(250);
      }
      const answer = await client.answer;

      expectErrorAnswer(answer, 408, 'request_timeout');
      expect(client.elapsedToAnswer()).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
      expect(client.elapsedToAnswer()).toBeLessThan(REQUEST_TIMEOUT_MS + 1500);
      await client.closed;
      expect(await audioUsageRows(db, accountId, 1)).toEqual([expect.objectContaining({ status: 408, error_code: 'request_timeout' })]);
    });

    it(`headers not complete within headers_timeout_ms (${HEADERS_TIMEOUT_MS} ms): 408 request_timeout as JSON with an x-request-id`, async () => {
      const client = new RawClient(short.url);
      await client.write('GET /v1/models HTTP/1.1\r\nHost: gateway\r\nX-Slow: ');
      const answer = await client.answer;

      expectErrorAnswer(answer, 408, 'request_timeout');
      expect(client.elapsedToAnswer()).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
      expect(client.elapsedToAnswer()).toBeLessThan(HEADERS_TIMEOUT_MS + 1000);
      await client.closed;
    });

    it('a response that takes longer than request_timeout_ms is not cut: the timeouts cover receiving the request only', async () => {
      const { key } = await entitled();
      fake.responseDelayMs = REQUEST_TIMEOUT_MS + 1500;
      const res = await postTranscription(short, key, audioForm({}, { data: audioFixture('hello.wav'), name: 'hello.wav', type: 'audio/wav' }));
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ text: 'Hello world.' });
    }, 15_000);
  });

  describe("Node's own refusals answer the error object with an x-request-id", () => {
    it('a bad request line: 400 invalid_request_error', async () => {
      const client = new RawClient(gw.url);
      await client.write('HELLO THERE\r\n\r\n');
      expectErrorAnswer(await client.answer, 400, 'invalid_request_error');
      await client.closed;
    });

    it('headers over 16 KiB: 431 invalid_request_error', async () => {
      const client = new RawClient(gw.url);
      await client.write(`GET /v1/models HTTP/1.1\r\nHost: gateway\r\nX-Big: ${'x'.repeat(20 * 1024)}\r\n\r\n`);
      const answer = await client.answer;
      expectErrorAnswer(answer, 431, 'invalid_request_error');
      expect(JSON.parse(answer.body).error.message).toContain('16384 bytes');
      await client.closed;
    });

    it('malformed chunked encoding in a request the gateway has begun: 400 invalid_request_error through its response', async () => {
      const { key } = await entitled();
      const client = new RawClient(gw.url);
      await client.write(uploadHead(key, 'Transfer-Encoding: chunked'));
      await client.write(chunkedPartHead());
      await client.write('zz-not-a-size\r\n');
      const answer = await client.answer;
      expectErrorAnswer(answer, 400, 'invalid_request_error');
      expect(JSON.parse(answer.body).error.message).toMatch(/^The request is not valid HTTP\/1\.1/);
      await client.closed;
    });

    it('both Content-Length and Transfer-Encoding: 400 invalid_request_error', async () => {
      const client = new RawClient(gw.url);
      await client.write('POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n');
      expectErrorAnswer(await client.answer, 400, 'invalid_request_error');
      await client.closed;
    });

    it('the gateway keeps serving after all of these', async () => {
      const res = await fetch(`${gw.url}/healthz`);
      expect(res.status).toBe(200);
    });
  });
});
