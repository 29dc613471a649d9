import OpenAI from 'openai';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { moneyOf, postChat, PricedModel, sdk, useGatewayWithFake, waitForUsageRows, withFakeProvider } from './support/chat-support';
import { FailureMode, FakeUpstream, RateLimitKind, unusedPortUrl } from './support/fake-upstream';
import { RawConfig, TestApp } from './support/test-app';

const MODEL: PricedModel = { id: 'flaky-chat', input: 2, output: 100, maxOutput: 4096 };
const UNREACHABLE: PricedModel = { id: 'unreachable-chat', input: 2, output: 100, maxOutput: 4096 };
const REQUEST_MS = 500;
/** The silent-stream case needs its first chunk through before the deadline, even on a loaded CI machine: a provider of its own with a longer one. */
const PATIENT: PricedModel = { id: 'patient-chat', input: 2, output: 100, maxOutput: 4096 };
const PATIENT_REQUEST_MS = 2500;

describe('chat upstream failures', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useGatewayWithFake(async (fakeUrl) => {
    const refusedUrl = await unusedPortUrl();
    return (raw: RawConfig) => {
      withFakeProvider(fakeUrl, [MODEL], { requestMs: REQUEST_MS })(raw);
      withFakeProvider(refusedUrl, [UNREACHABLE], { name: 'refused', requestMs: REQUEST_MS })(raw);
      withFakeProvider(fakeUrl, [PATIENT], { name: 'patient', requestMs: PATIENT_REQUEST_MS })(raw);
    };
  });
  beforeAll(() => ({ fake, gw, admin, db } = suite));
  beforeEach(() => fake.resetState());

  /** Nothing charged, nothing held, and one usage record with cost 0 and the code. */
  async function expectNotCharged(accountId: string, code: string, status: number, streamed = false): Promise<void> {
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, reserved: 0n, ledgerSum: 1_000_000n, charges: [], openHolds: 0 });
    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ model: expect.any(String), status, error_code: code, cost_micros: '0', streamed })]);
  }

  it.each<[RateLimitKind, RegExp]>([
    ['requests', /on requests per min \(RPM\)/],
    ['tokens', /on tokens per min \(TPM\)/],
  ])('passes an upstream 429 rate limit on %s through as 429 upstream_rejected with its message, not charged', async (kind, message) => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.rateLimit = kind;
    fake.failNext('status429');
    const err = await sdk(gw, key)
      .chat.completions.create({ model: MODEL.id, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err).toMatchObject({ status: 429, code: 'upstream_rejected' });
    expect(err.message).toMatch(message);
    expect(fake.requests).toHaveLength(1);
    await expectNotCharged(accountId, 'upstream_rejected', 429);
  });

  it('answers an upstream 429 insufficient_quota as 502 upstream_error (the gateway\'s quota, not a rate the client can wait out), not charged', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.rateLimit = 'insufficient_quota';
    fake.failNext('status429');
    const err = await sdk(gw, key)
      .chat.completions.create({ model: MODEL.id, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err).toMatchObject({ status: 502, code: 'upstream_error' });
    expect(err.message).toMatch(/run out of quota: You exceeded your current quota/);
    // One call: the SDK (maxRetries 0 here) would have retried a 429, and the gateway has no other deployment.
    expect(fake.requests).toHaveLength(1);
    await expectNotCharged(accountId, 'upstream_error', 502);
  });

  it('passes an upstream 400 through as 400 upstream_rejected with the upstream message', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.failureMessage = "This model's maximum context length is 8192 tokens.";
    fake.failNext('status4xx');
    const err = await sdk(gw, key)
      .chat.completions.create({ model: MODEL.id, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.code).toBe('upstream_rejected');
    expect(err.message).toContain("This model's maximum context length is 8192 tokens.");
    expect(fake.requests).toHaveLength(1);
    await expectNotCharged(accountId, 'upstream_rejected', 400);
  });

  it.each<[string, FailureMode]>([
    ['a 500', 'status500'],
    ['malformed JSON', 'malformedJson'],
    ['a reset connection', 'reset'],
    ['a connection broken mid-answer', 'midStreamFailure'],
  ])('answers 502 upstream_error for %s, charging nothing', async (_, mode) => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.failNext(mode);
    const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(502);
    const body: any = await res.json();
    expect(body.error).toMatchObject({ code: 'upstream_error', type: 'api_error', message: expect.any(String) });
    expect(fake.requests).toHaveLength(1);
    await expectNotCharged(accountId, 'upstream_error', 502);
  });

  it('answers 502 upstream_error for a refused connection, charging nothing', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const err = await sdk(gw, key)
      .chat.completions.create({ model: UNREACHABLE.id, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(err).toMatchObject({ status: 502, code: 'upstream_error' });
    await expectNotCharged(accountId, 'upstream_error', 502);
  });

  it('answers 502 upstream_error when the upstream hangs past timeouts.request_ms, and closes the upstream request', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.failNext('hang');
    const started = Date.now();
    const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'hi' }] });
    const elapsed = Date.now() - started;
    expect(res.status).toBe(502);
    expect(((await res.json()) as any).error.code).toBe('upstream_error');
    expect(elapsed).toBeGreaterThanOrEqual(REQUEST_MS - 50);
    expect(elapsed).toBeLessThan(REQUEST_MS + 3000);
    await fake.waitFor(() => fake.aborted().length === 1);
    await expectNotCharged(accountId, 'upstream_error', 502);
  });

  it.each<[string, FailureMode]>([
    ['a 500', 'status500'],
    ['a reset connection', 'reset'],
    ['a hang', 'hang'],
  ])('answers a streamed request with 502 upstream_error for %s before the first byte, charging nothing', async (_, mode) => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.failNext(mode);
    const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'hi' }], stream: true });
    expect(res.status).toBe(502);
    expect(((await res.json()) as any).error.code).toBe('upstream_error');
    await expectNotCharged(accountId, 'upstream_error', 502, true);
  });

  it('ends a stream whose upstream falls silent past timeouts.request_ms with an error event, charging nothing', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply = { content: 'one two three', promptTokens: 3, completionTokens: 3 };
    fake.slowChunkDelayMs = PATIENT_REQUEST_MS * 3;
    fake.failNext('slowChunks');
    const res = await postChat(gw, key, { model: PATIENT.id, messages: [{ role: 'user', content: 'hi' }], stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain('[DONE]');
    expect(text).toMatch(/data: \{"error":\{[^\n]*"code":"upstream_error"/);
    await fake.waitFor(() => fake.aborted().length === 1);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, reserved: 0n, charges: [] });
  });

  it('keeps serving once the upstream recovers', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    fake.failNext('reset', 2);
    const client = sdk(gw, key);
    const send = () => client.chat.completions.create({ model: MODEL.id, messages: [{ role: 'user', content: 'hi' }] });
    await expect(send()).rejects.toMatchObject({ status: 502 });
    await expect(send()).rejects.toMatchObject({ status: 502 });
    expect((await send()).choices[0].message.content).toBe(FakeUpstream.defaultReply().content);
  });
});
