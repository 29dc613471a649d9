import { request as httpRequest } from 'node:http';
import OpenAI, { APIConnectionError, APIError, toFile } from 'openai';
import { AdminClient } from './support/admin-client';
import { OwnGateway, startOwnGateway } from './support/own-gateway';
import { RawAnswer, RawClient, sleep } from './support/raw-client';
import { defaultRawConfig } from './support/test-app';

/**
 * DESIGN.md 12.3: a refusal decided before a body is read (401, 402, ...) reaches a client that is still
 * writing it: the gateway answers, reads and discards the body up to the largest body it reads on any route,
 * and closes the connection past that. The gateway runs in its own process: what is measured here is its
 * sockets, not jest's.
 */
const MB = 1024 * 1024;
const UPLOAD_BYTES = 5 * MB;
const REQUEST_TIMEOUT_MS = 6000;
const BOUNDARY = 'refused-upload';
const PART_HEAD = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`;
const PART_TAIL = `\r\n--${BOUNDARY}--\r\n`;
const UNKNOWN_KEY = 'sk-gw-not-a-key-0123456789abcdef0123456789';
const limits = defaultRawConfig().limits as { json_body_max_bytes: number; transcription_max_bytes: number };
/** What the gateway reads of a refused body at most (docs/decisions.md, "The HTTP adapter is Fastify"). */
const DISCARD_ALLOWANCE = Math.max(limits.json_body_max_bytes, limits.transcription_max_bytes + 64 * 1024);

function requestHead(path: string, key: string, contentType: string, framing: string): string {
  return `POST ${path} HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${contentType}\r\n${framing}\r\n\r\n`;
}

function uploadHead(key: string, framing: string): string {
  return requestHead('/v1/audio/transcriptions', key, `multipart/form-data; boundary=${BOUNDARY}`, framing);
}

function expectError(answer: RawAnswer, status: number, code: string): void {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(JSON.parse(answer.body)).toEqual({ error: { message: expect.any(String), type: expect.any(String), param: null, code } });
}

/** Sends a whole multipart upload of `fileBytes` in 64 KiB writes, whatever the gateway answers meanwhile. */
async function uploadWhole(gw: OwnGateway, key: string, fileBytes: number, headers = ''): Promise<{ client: RawClient; total: number }> {
  const client = new RawClient(gw.url, { writeAfterAnswer: true });
  const length = PART_HEAD.length + fileBytes + PART_TAIL.length;
  const head = uploadHead(key, `${headers}Content-Length: ${length}`);
  await client.write(head);
  await client.write(PART_HEAD);
  // A pause now and then, as a client on a network sends: the answer comes while it is still writing.
  await client.stream(fileBytes, { chunked: false, pauseMs: 1 });
  await client.write(PART_TAIL);
  return { client, total: head.length + length };
}

describe('Refusals before the body reach a client that is still writing it', () => {
  let gw: OwnGateway;
  let admin: AdminClient;

  beforeAll(async () => {
    gw = await startOwnGateway({ config: (raw) => (raw.limits = { ...raw.limits, request_timeout_ms: REQUEST_TIMEOUT_MS }) });
    admin = new AdminClient(gw.url);
  }, 120_000);
  afterAll(async () => {
    await gw?.stop();
  });

  describe(`a ${UPLOAD_BYTES / MB} MB upload, written to its end by a raw client, then every byte written without EPIPE or a reset`, () => {
    const cases: [string, () => Promise<string>, number, string][] = [
      ['without a subscription: 402 subscription_required', async () => (await admin.createAccount({})).key, 402, 'subscription_required'],
      ['with a key that does not exist: 401 invalid_api_key', async () => UNKNOWN_KEY, 401, 'invalid_api_key'],
    ];
    it.each(cases)('%s', async (_name, keyOf, status, code) => {
      const { client, total } = await uploadWhole(gw, await keyOf(), UPLOAD_BYTES);
      expectError(await client.answer, status, code);
      expect(client.error).toBeNull();
      expect(client.written).toBe(total);
      client.close();
    });
  });

  it('a client that asks for Connection: close reads the answer, writes its whole body, and then the gateway closes', async () => {
    const { key } = await admin.createAccount({});
    const { client, total } = await uploadWhole(gw, key, UPLOAD_BYTES, 'Connection: close\r\n');
    const answer = await client.answer;
    expectError(answer, 402, 'subscription_required');
    expect(answer.headers.connection).toBe('close');
    await client.closed;
    expect(client.error).toBeNull();
    expect(client.written).toBe(total);
  });

  it("Node's http client without an agent (Connection: close) writing 5 MB: 402 subscription_required, and no error on the request", async () => {
    const { key } = await admin.createAccount({});
    const length = PART_HEAD.length + UPLOAD_BYTES + PART_TAIL.length;
    const result = await new Promise<{ status: number; body: string; error: Error | null }>((resolve) => {
      let error: Error | null = null;
      let answer: { status: number; body: string } | null = null;
      const req = httpRequest(`${gw.url}/v1/audio/transcriptions`, {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(length) },
      });
      req.on('error', (err) => (error ??= err));
      req.on('response', (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => (answer = { status: res.statusCode!, body }));
      });
      req.on('close', () => resolve({ ...(answer ?? { status: 0, body: '' }), error }));
      req.write(PART_HEAD);
      for (let sent = 0; sent < UPLOAD_BYTES; sent += 64 * 1024) req.write(Buffer.alloc(64 * 1024, 0x61));
      req.end(PART_TAIL);
    });
    expect(result.error).toBeNull();
    expect(result.status).toBe(402);
    expect(JSON.parse(result.body).error.code).toBe('subscription_required');
  });

  it(`the openai SDK uploading ${UPLOAD_BYTES / MB} MB without a subscription gets an APIError 402, not a connection error`, async () => {
    const { key } = await admin.createAccount({});
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const file = await toFile(Buffer.alloc(UPLOAD_BYTES, 0x61), 'big.wav', { type: 'audio/wav' });
    const failure = await client.audio.transcriptions.create({ file, model: 'whisper-1' }).catch((err: unknown) => err);
    expect(failure).not.toBeInstanceOf(APIConnectionError);
    expect(failure).toBeInstanceOf(APIError);
    expect(failure).toMatchObject({ status: 402, code: 'subscription_required' });
  });

  it('a JSON body refused before it is read (401 on a 5 MB chat request): the answer, then the connection serves the next request', async () => {
    const client = new RawClient(gw.url, { writeAfterAnswer: true });
    const key = UNKNOWN_KEY;
    await client.write(requestHead('/v1/chat/completions', key, 'application/json', `Content-Length: ${UPLOAD_BYTES}`));
    await client.stream(UPLOAD_BYTES, { chunked: false, pauseMs: 1 });
    expectError(await client.answer, 401, 'invalid_api_key');
    // The body was read to its end: the same connection takes another request.
    await client.write(requestHead('/v1/chat/completions', key, 'application/json', 'Content-Length: 2') + '{}');
    while (client.answerCount() < 2 && !client.socket.destroyed) await sleep(20);
    expect(client.answerCount()).toBe(2);
    expect(client.error).toBeNull();
    client.close();
  });

  it('an endless body after a refusal: the answer arrives, and the connection is closed once the allowance is read', async () => {
    const { key } = await admin.createAccount({});
    const client = new RawClient(gw.url, { writeAfterAnswer: true });
    await client.write(uploadHead(key, 'Transfer-Encoding: chunked'));
    const sent = 8 * DISCARD_ALLOWANCE;
    await client.stream(sent, { chunked: true });
    expectError(await client.answer, 402, 'subscription_required');
    await client.closed;
    // What the client's socket took includes the kernel's buffers between the two ends (a few MB on loopback).
    expect(client.written).toBeGreaterThan(DISCARD_ALLOWANCE / 2);
    expect(client.written).toBeLessThan(DISCARD_ALLOWANCE + 16 * MB);
    expect(client.answerCount()).toBe(1);
  });

  it(`a body trickling after a refusal is cut at request_timeout_ms (${REQUEST_TIMEOUT_MS} ms), without a second answer`, async () => {
    const { key } = await admin.createAccount({});
    const client = new RawClient(gw.url, { writeAfterAnswer: true });
    await client.write(uploadHead(key, 'Transfer-Encoding: chunked'));
    await client.write(`${PART_HEAD.length.toString(16)}\r\n${PART_HEAD}\r\n`);
    expectError(await client.answer, 402, 'subscription_required');
    while (!client.socket.destroyed && Date.now() - client.startedAt < 4 * REQUEST_TIMEOUT_MS) {
      await client.write('4\r\nabcd\r\n');
      await sleep(200);
    }
    expect(client.socket.destroyed).toBe(true);
    expect(Date.now() - client.startedAt).toBeLessThan(3 * REQUEST_TIMEOUT_MS);
    expect(client.answerCount()).toBe(1);
  }, 60_000);
});
