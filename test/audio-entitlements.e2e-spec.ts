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
  FAKE_TTS,
  fairUseUsed,
  postSpeech,
  postTranscription,
  withFakeAudioProvider,
} from './support/audio-support';
import { useGatewayWithFake } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { TestApp } from './support/test-app';

const ALLOWANCE = 3;
const TEN_MB = 10 * 1024 * 1024;

describe('audio entitlements and fair use', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useGatewayWithFake((fakeUrl) => withFakeAudioProvider(fakeUrl, { fairUse: ALLOWANCE }));
  beforeAll(() => ({ fake, gw, admin, db } = suite));
  beforeEach(() => fake.resetState());

  const transcribe = (key: string) => postTranscription(gw, key, audioForm({ model: 'whisper-1' }, { data: audioFixture('hello.wav'), name: 'hello.wav' }));
  const speak = (key: string) => postSpeech(gw, key, { model: FAKE_TTS.id, input: 'Hello.' });

  /** Moves the account's subscription end by `days` (negative: into the past), as if it had started earlier. */
  async function shiftSubscription(accountId: string, days: number): Promise<void> {
    await db.query(`UPDATE accounts SET subscription_ends_at = subscription_ends_at + make_interval(days => $2) WHERE id = $1`, [accountId, days]);
  }

  async function expectBothRefused(key: string, code: string): Promise<void> {
    expect(await errorOf(await transcribe(key))).toMatchObject({ status: 402, code, type: 'insufficient_quota' });
    expect(await errorOf(await speak(key))).toMatchObject({ status: 402, code, type: 'insufficient_quota' });
    expect(fake.requests).toHaveLength(0);
  }

  describe('subscription_required', () => {
    it('for an account with no subscription, even with credits loaded', async () => {
      const { key } = await admin.createAccount({ creditsUsd: '100' });
      await expectBothRefused(key, 'subscription_required');
    });

    it('for a subscription past its end', async () => {
      const { key } = await admin.createAccount({ subscription: 'active', endsAt: new Date(Date.now() - 60_000).toISOString() });
      await expectBothRefused(key, 'subscription_required');
    });

    it('for a trial started 15 days ago, while one started 13 days ago is entitled', async () => {
      const expired = await admin.createAccount({ subscription: 'trial' });
      await shiftSubscription(expired.accountId, -15);
      await expectBothRefused(expired.key, 'subscription_required');

      const current = await admin.createAccount({ subscription: 'trial' });
      await shiftSubscription(current.accountId, -13);
      expect((await transcribe(current.key)).status).toBe(200);
      expect((await speak(current.key)).status).toBe(200);
    });

    it('after the subscription is set to none', async () => {
      const { accountId, key } = await admin.createAccount({ subscription: 'active' });
      expect((await speak(key)).status).toBe(200);
      await admin.request('PUT', `/accounts/${accountId}/subscription`, { status: 'none' });
      fake.resetState();
      await expectBothRefused(key, 'subscription_required');
    });

    it('comes before body validation: an unentitled account with an invalid body gets 402', async () => {
      const { key } = await admin.createAccount();
      expect(await errorOf(await postSpeech(gw, key, '{not json'))).toMatchObject({ status: 402, code: 'subscription_required' });
      expect(await errorOf(await postTranscription(gw, key, audioForm({})))).toMatchObject({ status: 402, code: 'subscription_required' });
    });
  });

  describe('before the upload is read', () => {
    /** Declares a 10 MB multipart upload, sends its first 64 KB only, and waits for the answer. */
    function startLargeUpload(key: string): Promise<{ status: number; code: string; sentBytes: number }> {
      const boundary = 'bigupload';
      const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
      const first = Buffer.concat([head, audioFixture('hello.wav'), Buffer.alloc(64 * 1024)]);
      return new Promise((resolve, reject) => {
        const req = httpRequest(`${gw.url}/v1/audio/transcriptions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(TEN_MB) },
        });
        req.on('response', (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => {
            resolve({ status: res.statusCode!, code: JSON.parse(body).error.code, sentBytes: first.length });
            req.destroy();
          });
        });
        req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
        req.write(first);
      });
    }

    it('an unentitled account sending a 10 MB file gets 402, not 413, without the gateway waiting for the upload', async () => {
      const { key } = await admin.createAccount();
      const result = await startLargeUpload(key);
      expect(result).toMatchObject({ status: 402, code: 'subscription_required' });
      expect(result.sentBytes).toBeLessThan(TEN_MB / 10);
      expect(fake.requests).toHaveLength(0);
    });

    it('an account out of fair use sending a 10 MB file gets 402 fair_use_limit_reached', async () => {
      const { accountId, key } = await admin.createAccount({ subscription: 'active' });
      await db.query(
        `INSERT INTO monthly_counters (account_id, month, fair_use_used) VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date, $2)`,
        [accountId, ALLOWANCE],
      );
      expect(await startLargeUpload(key)).toMatchObject({ status: 402, code: 'fair_use_limit_reached' });
    });

    it('an entitled account declaring 10 MB gets 413 at once, and the request is given back', async () => {
      const { accountId, key } = await admin.createAccount({ subscription: 'active' });
      expect(await startLargeUpload(key)).toMatchObject({ status: 413, code: 'payload_too_large' });
      await expectFairUse(db, accountId, 0);
    });
  });

  describe('fair_use_limit_reached', () => {
    it(`with an allowance of ${ALLOWANCE}, ${3 * ALLOWANCE} concurrent calls across both endpoints give exactly ${ALLOWANCE} successes`, async () => {
      const { accountId, key } = await admin.createAccount({ subscription: 'active' });
      fake.responseDelayMs = 300;
      const calls = Array.from({ length: 3 * ALLOWANCE }, (_, i) => (i % 2 === 0 ? transcribe(key) : speak(key)));
      const responses = await Promise.all(calls);
      const statuses = await Promise.all(responses.map(async (r) => (r.status === 200 ? 'ok' : (await errorOf(r)).code)));
      expect(statuses.filter((s) => s === 'ok')).toHaveLength(ALLOWANCE);
      expect(statuses.filter((s) => s === 'fair_use_limit_reached')).toHaveLength(2 * ALLOWANCE);
      expect(fake.requests).toHaveLength(ALLOWANCE);
      await expectFairUse(db, accountId, ALLOWANCE);
      expect((await admin.account(accountId)).fair_use).toMatchObject({ used: ALLOWANCE, allowance: ALLOWANCE });
      await expectBothRefusedAfterReset(key);
    });

    async function expectBothRefusedAfterReset(key: string): Promise<void> {
      fake.resetState();
      await expectBothRefused(key, 'fair_use_limit_reached');
    }

    it('failed calls do not consume the allowance', async () => {
      const { accountId, key } = await admin.createAccount({ subscription: 'active' });
      fake.failNext('status500');
      expect((await transcribe(key)).status).toBe(502);
      fake.failNext('status4xx');
      expect((await speak(key)).status).toBe(400);
      expect((await postSpeech(gw, key, { model: FAKE_TTS.id })).status).toBe(400);
      expect((await postSpeech(gw, key, '{oops')).status).toBe(400);
      expect((await postTranscription(gw, key, audioForm({ model: 'whisper-1' }))).status).toBe(400);
      expect((await postTranscription(gw, key, audioForm({}, { data: Buffer.from('text'), name: 'a.txt' }))).status).toBe(400);
      await expectFairUse(db, accountId, 0);

      for (let i = 0; i < ALLOWANCE; i++) expect((await (i % 2 ? speak(key) : transcribe(key))).status).toBe(200);
      await expectFairUse(db, accountId, ALLOWANCE);
      expect(await errorOf(await speak(key))).toMatchObject({ status: 402, code: 'fair_use_limit_reached' });
    });

    it('is counted per UTC month: last month used up does not limit this month', async () => {
      const { accountId, key } = await admin.createAccount({ subscription: 'active' });
      await db.query(
        `INSERT INTO monthly_counters (account_id, month, fair_use_used)
         VALUES ($1, (date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month')::date, $2)`,
        [accountId, ALLOWANCE],
      );
      expect((await speak(key)).status).toBe(200);
      expect(await fairUseUsed(db, accountId)).toBe(1);
    });
  });

  it('audio calls never touch credits: balance, reserve and ledger unchanged, no spend', async () => {
    const { accountId, key } = await admin.createAccount({ subscription: 'active', creditsUsd: '2.5', monthlyLimitUsd: '10' });
    const before = await creditsOf(db, accountId);
    expect((await transcribe(key)).status).toBe(200);
    expect((await speak(key)).status).toBe(200);
    fake.failNext('status500');
    expect((await speak(key)).status).toBe(502);
    expect((await postSpeech(gw, key, { model: FAKE_TTS.id })).status).toBe(400);
    await audioUsageRows(db, accountId, 4);
    expect(await creditsOf(db, accountId)).toEqual(before);
    const [counter] = await db.query(`SELECT spend_micros, held_micros FROM monthly_counters WHERE account_id = $1`, [accountId]);
    expect(counter).toEqual({ spend_micros: '0', held_micros: '0' });
    expect((await admin.account(accountId)).credits_usd).toBe('2.500000');
  });

  it('every call appears in usage: successes, 4xx, 402 and upstream failures', async () => {
    const entitled = await admin.createAccount({ subscription: 'active' });
    expect((await transcribe(entitled.key)).status).toBe(200);
    expect((await speak(entitled.key)).status).toBe(200);
    expect((await postSpeech(gw, entitled.key, { model: FAKE_TTS.id })).status).toBe(400);
    fake.failNext('status500');
    expect((await transcribe(entitled.key)).status).toBe(502);
    expect((await speak(entitled.key)).status).toBe(200);
    expect((await speak(entitled.key)).status).toBe(402);

    const rows = await audioUsageRows(db, entitled.accountId, 6);
    // Records are written as each response closes: compare them as a set, not by insertion order.
    const summary = (r: (typeof rows)[number]) => `${r.endpoint} ${r.status} ${r.error_code ?? '-'} ${r.model ?? '-'}`;
    expect(rows.map(summary).sort()).toEqual(
      [
        `/v1/audio/transcriptions 200 - ${FAKE_STT.id}`,
        `/v1/audio/speech 200 - ${FAKE_TTS.id}`,
        `/v1/audio/speech 400 missing_input ${FAKE_TTS.id}`,
        `/v1/audio/transcriptions 502 upstream_error ${FAKE_STT.id}`,
        `/v1/audio/speech 200 - ${FAKE_TTS.id}`,
        '/v1/audio/speech 402 fair_use_limit_reached -',
      ].sort(),
    );
    expect(rows.every((r) => r.cost_micros === '0')).toBe(true);

    const unentitled = await admin.createAccount();
    await transcribe(unentitled.key);
    const [refused] = await audioUsageRows(db, unentitled.accountId, 1);
    expect(refused).toMatchObject({ endpoint: '/v1/audio/transcriptions', status: 402, error_code: 'subscription_required' });
  });
});
