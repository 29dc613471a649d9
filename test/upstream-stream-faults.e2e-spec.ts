import OpenAI from 'openai';
import { connect } from 'node:net';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { audioFixture, audioForm, audioUsageRows, errorOf, expectFairUse, FAKE_STT, fairUseUsed, FAKE_TTS, postSpeech, postTranscription, withFakeAudioProvider } from './support/audio-support';
import { moneyOf, postChat, PricedModel, sdk, upstreamModelOf, useGatewayWithFake, waitForUsageRows, withFakeProvider } from './support/chat-support';
import { FailureMode, FakeUpstream } from './support/fake-upstream';
import { RawConfig, TestApp } from './support/test-app';

// DESIGN.md section 9 / issue 13 item 3: a misbehaving upstream ends only its own request, charges nothing,
// and never the process (a crash here would end jest itself).
const GOOD: PricedModel = { id: 'steady-chat', input: 2, output: 100, maxOutput: 4096 };
const BAD: PricedModel = { id: 'broken-chat', input: 2, output: 100, maxOutput: 4096 };
const CREDITS = 1_000_000n;
const SHAPES: FailureMode[] = ['notSse', 'invalidJsonData', 'truncatedChunked', 'resetMidStream', 'wrongContentType', 'endlessLine'];
/** One model per shape, on the same provider (one connection pool) as GOOD, for faults that run side by side. */
const BAD_BY_SHAPE = SHAPES.map((mode): [FailureMode, PricedModel] => [mode, { ...BAD, id: `broken-${mode}` }]);

/** Shapes that fail before any event reaches the client: 502 upstream_error. */
const BEFORE_FIRST_BYTE: [FailureMode, number | null][] = [
  ['notSse', null],
  ['invalidJsonData', 0],
  ['truncatedChunked', 0],
  ['resetMidStream', 0],
  ['wrongContentType', null],
  ['endlessLine', 0],
];
/** Shapes that fail after some events were relayed: an in-band error event, no [DONE]. */
const AFTER_FIRST_BYTE: [FailureMode, number][] = [
  ['invalidJsonData', 2],
  ['truncatedChunked', 2],
  ['resetMidStream', 2],
  ['endlessLine', 2],
];

describe('misbehaving upstream streams', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useGatewayWithFake((fakeUrl) => (raw: RawConfig) => {
    withFakeProvider(fakeUrl, [GOOD, BAD, ...BAD_BY_SHAPE.map(([, m]) => m)], { requestMs: 5000 })(raw);
    withFakeAudioProvider(fakeUrl)(raw);
  });
  beforeAll(() => ({ fake, gw, admin, db } = suite));
  beforeEach(() => fake.resetState());

  const chatBody = (model: PricedModel, stream: boolean) => ({ model: model.id, messages: [{ role: 'user', content: 'hi' }], stream });

  /** Balance untouched, nothing held, no charge, and one usage record with cost 0 and the code. */
  async function expectNotCharged(accountId: string, status: number, streamed: boolean): Promise<void> {
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: CREDITS, reserved: 0n, ledgerSum: CREDITS, charges: [], openHolds: 0 });
    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ model: BAD.id, status, error_code: 'upstream_error', cost_micros: '0', streamed })]);
  }

  /** The gateway still answers, streamed and not, after the fault. */
  async function expectServing(key: string): Promise<void> {
    const client = sdk(gw, key);
    const answer = await client.chat.completions.create({ model: GOOD.id, messages: [{ role: 'user', content: 'again' }] });
    expect(answer.choices[0].message.content).toBe(FakeUpstream.defaultReply().content);
    let text = '';
    for await (const chunk of await client.chat.completions.create({ model: GOOD.id, messages: [{ role: 'user', content: 'again' }], stream: true })) {
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toBe(FakeUpstream.defaultReply().content);
  }

  describe.each(BEFORE_FIRST_BYTE)('streamed, %s (fault after %s events)', (mode, faultAfter) => {
    it('answers 502 upstream_error before the first byte, charges nothing, and keeps serving', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.failureByModel[upstreamModelOf(BAD)] = mode;
      fake.faultAfterEvents = faultAfter;
      const res = await postChat(gw, key, chatBody(BAD, true));
      expect(res.status).toBe(502);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(((await res.json()) as any).error).toMatchObject({ code: 'upstream_error', type: 'api_error' });
      await expectNotCharged(accountId, 502, true);

      const err = await sdk(gw, key).chat.completions.create({ model: BAD.id, messages: [{ role: 'user', content: 'hi' }], stream: true }).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect(err).toMatchObject({ status: 502, code: 'upstream_error' });
      await expectServing(key);
    });
  });

  describe.each(AFTER_FIRST_BYTE)('streamed, %s after %s events', (mode, faultAfter) => {
    it('ends the stream with an in-band error event and no [DONE], charges nothing, and keeps serving', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.failureByModel[upstreamModelOf(BAD)] = mode;
      fake.faultAfterEvents = faultAfter;
      const res = await postChat(gw, key, chatBody(BAD, true));
      expect(res.status).toBe(200);
      const text = await res.text();
      const events = text.split('\n\n').filter(Boolean);
      expect(events.length).toBeGreaterThanOrEqual(2);
      expect(events.at(-1)).toMatch(/^data: \{"error":\{.*"code":"upstream_error"/);
      expect(JSON.parse(events.at(-1)!.slice(6)).error).toMatchObject({ type: 'api_error', code: 'upstream_error' });
      expect(text).not.toContain('[DONE]');
      await expectNotCharged(accountId, 200, true);

      // As a client sees it through the official SDK: the chunks before, then an APIError.
      const received: string[] = [];
      const err = await (async () => {
        const stream = await sdk(gw, key).chat.completions.create({ model: BAD.id, messages: [{ role: 'user', content: 'hi' }], stream: true });
        for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
      })().catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect(err.error ?? err).toMatchObject({ code: 'upstream_error' });
      expect(received.length).toBeGreaterThanOrEqual(1);
      await expectServing(key);
    });
  });

  it.each<FailureMode>(SHAPES)(
    'answers a non-streamed request with 502 upstream_error for %s, charging nothing',
    async (mode) => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.failureByModel[upstreamModelOf(BAD)] = mode;
      const res = await postChat(gw, key, chatBody(BAD, false));
      expect(res.status).toBe(502);
      expect(((await res.json()) as any).error).toMatchObject({ code: 'upstream_error', type: 'api_error' });
      await expectNotCharged(accountId, 502, false);
      await expectServing(key);
    },
  );

  it('stops reading an endless line at the documented bound (1 MiB streamed, 16 MiB as JSON)', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    fake.failureByModel[upstreamModelOf(BAD)] = 'endlessLine';
    expect((await postChat(gw, key, chatBody(BAD, true))).status).toBe(502);
    await fake.waitFor(() => fake.aborted().length === 1);
    // What was read before the gateway gave up, plus what sat in the socket buffers.
    expect(fake.endlessBytesSent).toBeLessThan(8 * 1024 * 1024);
    fake.endlessBytesSent = 0;
    expect((await postChat(gw, key, chatBody(BAD, false))).status).toBe(502);
    await fake.waitFor(() => fake.aborted().length === 2);
    expect(fake.endlessBytesSent).toBeLessThan(24 * 1024 * 1024);
  });

  it('leaves concurrent requests on the same upstream untouched while every shape fails', async () => {
    const { accountId: goodAccount, key: goodKey } = await admin.createAccount({ creditsUsd: '100' });
    const { accountId: badAccount, key: badKey } = await admin.createAccount({ creditsUsd: '100' });
    fake.chunkDelayMs = 20;
    fake.faultAfterEvents = 1;
    for (const [mode, model] of BAD_BY_SHAPE) fake.failureByModel[upstreamModelOf(model)] = mode;
    const good = Array.from({ length: 6 }, async (_, i) => {
      const res = await postChat(gw, goodKey, chatBody(GOOD, i % 2 === 0));
      return { status: res.status, text: await res.text() };
    });
    // One provider, one connection pool: the faults are on connections shared with the good requests.
    const bad = BAD_BY_SHAPE.map(async ([, model]) => {
      const res = await postChat(gw, badKey, chatBody(model, true));
      return { status: res.status, text: await res.text() };
    });
    const goodResults = await Promise.all(good);
    const badResults = await Promise.all(bad);
    for (const [i, r] of goodResults.entries()) {
      expect(r.status).toBe(200);
      if (i % 2 === 0) expect(r.text.endsWith('data: [DONE]\n\n')).toBe(true);
      else expect(JSON.parse(r.text).choices[0].message.content).toBe(FakeUpstream.defaultReply().content);
    }
    for (const r of badResults) expect(r.status === 502 || /data: \{"error"/.test(r.text)).toBe(true);
    const money = await moneyOf(db, goodAccount);
    expect(money.charges).toHaveLength(6);
    expect(money).toMatchObject({ reserved: 0n, openHolds: 0, ledgerSum: money.balance });
    expect(await moneyOf(db, badAccount)).toMatchObject({ balance: 100_000_000n, reserved: 0n, charges: [], openHolds: 0 });
    expect((await waitForUsageRows(db, badAccount, SHAPES.length)).map((r) => r.error_code)).toEqual(SHAPES.map(() => 'upstream_error'));
  });

  describe('audio', () => {
    let key: string, accountId: string;
    beforeAll(async () => ({ key, accountId } = await admin.createAccount({ subscription: 'active' })));

    it('breaks a speech response whose upstream resets mid-audio, records the error, and keeps serving', async () => {
      fake.failNext('resetMidStream');
      const used = await fairUseUsed(db, accountId);
      const res = await postSpeech(gw, key, { model: FAKE_TTS.id, input: 'Hello there.' });
      expect(res.status).toBe(200);
      await expect(res.arrayBuffer()).rejects.toThrow();
      const ok = await postSpeech(gw, key, { model: FAKE_TTS.id, input: 'Hello there.' });
      expect(Buffer.from(await ok.arrayBuffer())).toEqual(fake.speechAudio);
      const rows = await audioUsageRows(db, accountId, 2);
      expect(rows.map((r) => r.error_code)).toEqual(['upstream_error', null]);
      // Included feature: the broken response's fair-use request is given back, only the good one counts.
      await expectFairUse(db, accountId, used + 1);
    });

    it('answers speech with 502 when the upstream resets before any audio', async () => {
      fake.faultAfterEvents = 0;
      fake.failNext('wrongContentType');
      const res = await postSpeech(gw, key, { model: FAKE_TTS.id, input: 'Hello there.' });
      expect(await errorOf(res)).toMatchObject({ status: 502, code: 'upstream_error' });
    });

    it.each<FailureMode>(['invalidJsonData', 'endlessLine', 'truncatedChunked', 'resetMidStream', 'wrongContentType'])(
      'answers a transcription with 502 upstream_error when the upstream sends %s',
      async (mode) => {
        fake.failNext(mode);
        const res = await postTranscription(gw, key, audioForm({ model: FAKE_STT.id }, { data: audioFixture('hello.wav'), name: 'hello.wav', type: 'audio/wav' }));
        expect(await errorOf(res)).toMatchObject({ status: 502, code: 'upstream_error' });
        const ok = await postTranscription(gw, key, audioForm({ model: FAKE_STT.id }, { data: audioFixture('hello.wav'), name: 'hello.wav', type: 'audio/wav' }));
        expect(ok.status).toBe(200);
      },
    );

    it('survives a client that aborts an upload mid-way, and serves the next one', async () => {
      const used = await fairUseUsed(db, accountId);
      const { host, port } = new URL(gw.url);
      const boundary = 'gatewayboundary';
      const head = `--${boundary}\r\ncontent-disposition: form-data; name="model"\r\n\r\n${FAKE_STT.id}\r\n--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.wav"\r\ncontent-type: audio/wav\r\n\r\n`;
      const socket = connect(Number(port), host.split(':')[0]);
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(
        `POST /v1/audio/transcriptions HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer ${key}\r\n` +
          `content-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: 1000000\r\n\r\n${head}`,
      );
      socket.write(Buffer.alloc(64 * 1024, 1));
      await new Promise((r) => setTimeout(r, 100));
      socket.resetAndDestroy();
      await new Promise((r) => setTimeout(r, 200));
      const ok = await postTranscription(gw, key, audioForm({ model: FAKE_STT.id }, { data: audioFixture('hello.wav'), name: 'hello.wav', type: 'audio/wav' }));
      expect(ok.status).toBe(200);
      expect(fake.requests.filter((r) => r.path === '/v1/audio/transcriptions')).toHaveLength(1);
      await expectFairUse(db, accountId, used + 1);
    });
  });
});
