import Anthropic, { APIError } from '@anthropic-ai/sdk';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { moneyOf, PricedModel, upstreamModelOf, useGatewayWithFake, waitForUsageRows, withFakeProvider } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { anthropic, postMessages } from './support/messages-support';
import { parseNamedEvents } from './support/responses-support';
import { TestApp } from './support/test-app';

const MODEL: PricedModel = { id: 'msg-err-chat', input: 3, output: 150, maxOutput: 4096 };
/** Served by an upstream that always fails, so that its circuit opens (a model of its own: the others' circuits stay closed). */
const BROKEN: PricedModel = { id: 'msg-err-broken', input: 3, output: 150, maxOutput: 4096 };
const HELLO = { model: MODEL.id, max_tokens: 100, messages: [{ role: 'user' as const, content: 'Hello' }] };

/** The SDK's error for a call, with the body it read: Anthropic's envelope carrying our code. */
async function sdkError(call: Promise<unknown>): Promise<APIError> {
  try {
    await call;
  } catch (err) {
    return err as APIError;
  }
  throw new Error('the call succeeded');
}

describe('POST /v1/messages: errors in Anthropic\'s envelope, surfaced as the SDK\'s error classes (issue 25)', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useGatewayWithFake((url) => (raw) => {
    withFakeProvider(url, [MODEL, BROKEN], { requestMs: 1000, burst: { requests: 8, window_s: 60 } })(raw);
    const broken = raw.catalog.find((entry: { id: string }) => entry.id === BROKEN.id);
    Object.assign(broken, { deployments: [{ provider: 'fake', upstream_model: upstreamModelOf(BROKEN) }], failure_threshold: 2, cooldown_s: 30, retries: 0 });
    delete broken.provider;
    delete broken.upstream_model;
  });
  beforeAll(() => ({ fake, gw, admin, db } = suite));
  beforeEach(() => fake.resetState());

  /** Nothing held or charged: the balance is the credits, the ledger only the top-up. */
  async function expectUncharged(accountId: string, credits: bigint): Promise<void> {
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: credits, reserved: 0n, ledgerSum: credits, charges: [], openHolds: 0 });
  }

  it('401 authentication_error for a bad x-api-key and a bad Bearer token (AuthenticationError, code invalid_api_key)', async () => {
    for (const client of [anthropic(gw, 'gwk_nope'), anthropic(gw, 'gwk_nope', { bearer: true })]) {
      const err = await sdkError(client.messages.create(HELLO));
      expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
      expect(err.status).toBe(401);
      expect(err.error).toEqual({ type: 'error', error: { type: 'authentication_error', code: 'invalid_api_key', message: expect.any(String), param: null } });
    }
    const missing = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(HELLO) });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error', code: 'invalid_api_key' } });
    // Other routes keep OpenAI's envelope and take no x-api-key.
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const chat = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(HELLO) });
    expect(chat.status).toBe(401);
    expect(await chat.json()).toEqual({ error: expect.objectContaining({ type: 'authentication_error', code: 'invalid_api_key' }) });
  });

  it('400 invalid_request_error naming max_tokens when it is missing; unsupported_parameter for mcp_servers, container, typed client tools and forcing a server tool; nothing called or held', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const client = anthropic(gw, key);
    const missing = await sdkError(client.messages.create({ model: MODEL.id, messages: HELLO.messages } as unknown as Anthropic.MessageCreateParamsNonStreaming));
    expect(missing).toBeInstanceOf(Anthropic.BadRequestError);
    expect(missing.error).toEqual({ type: 'error', error: { type: 'invalid_request_error', code: 'invalid_request_error', param: 'max_tokens', message: expect.stringContaining('max_tokens') } });

    const refused: [Record<string, unknown>, string][] = [
      [{ mcp_servers: [{ type: 'url', url: 'https://example.com/sse', name: 'x' }] }, 'mcp_servers'],
      [{ container: 'container_123' }, 'container'],
      [{ tools: [{ type: 'bash_20250124', name: 'bash' }] }, 'tools[0].type'],
      [{ tools: [{ type: 'web_search_20250305', name: 'web_search' }], tool_choice: { type: 'tool', name: 'web_search' } }, 'tool_choice'],
      [{ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }] }, 'messages[0].content[0].type'],
    ];
    for (const [fields, param] of refused) {
      const err = await sdkError(client.messages.create({ ...HELLO, ...fields } as Anthropic.MessageCreateParamsNonStreaming));
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      expect(err.error).toEqual({ type: 'error', error: { type: 'invalid_request_error', code: 'unsupported_parameter', param, message: expect.stringContaining(param) } });
    }
    const badModel = await sdkError(client.messages.create({ ...HELLO, model: 'no-such-model' }));
    expect(badModel.error).toMatchObject({ error: { type: 'invalid_request_error', code: 'unknown_model', param: 'model' } });
    expect(fake.requests).toHaveLength(0);
    await expectUncharged(accountId, 1_000_000n);
    const rows = await waitForUsageRows(db, accountId, 7);
    expect(rows.map((r) => [r.endpoint, r.status])).toEqual(Array(7).fill(['/v1/messages', 400]));
  });

  it('402 billing_error (PaymentRequiredError) with insufficient_credits or monthly_limit_reached', async () => {
    const poor = await admin.createAccount({ creditsUsd: '0.000001' });
    const err = await sdkError(anthropic(gw, poor.key).messages.create(HELLO));
    expect(err).toBeInstanceOf(Anthropic.PaymentRequiredError);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'billing_error', code: 'insufficient_credits' } });
    // max_tokens is always set here: no advice to lower it when not even one output token fits.
    expect((err.error as any).error.message).toMatch(/the balance of \$0\.000001 does not cover this prompt with even 1 output token\. Top up credits\.$/);
    expect((err.error as any).error.message).not.toMatch(/lower max_tokens|not even/);
    const limited = await admin.createAccount({ creditsUsd: '1', monthlyLimitUsd: '0.000001' });
    const capped = await sdkError(anthropic(gw, limited.key).messages.stream(HELLO).finalMessage());
    expect(capped).toBeInstanceOf(Anthropic.PaymentRequiredError);
    expect(capped.error).toMatchObject({ error: { type: 'billing_error', code: 'monthly_limit_reached' } });
    expect(fake.requests).toHaveLength(0);
    await expectUncharged(limited.accountId, 1_000_000n);
  });

  it("a key's controls hold here too: 400 model_not_allowed for a model outside its list, 402 key_limit_reached over its limit; nothing called or charged", async () => {
    const { accountId, key: accountKey } = await admin.createAccount({ creditsUsd: '1' });
    const newKey = async (controls: object) => (await admin.request('POST', `/accounts/${accountId}/keys`, { name: 'k', ...controls })).body.key as string;
    const calls = fake.requests.length;

    const notAllowed = await sdkError(anthropic(gw, await newKey({ models: [BROKEN.id] })).messages.create(HELLO));
    expect(notAllowed).toBeInstanceOf(Anthropic.BadRequestError);
    expect(notAllowed.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'model_not_allowed', param: 'model' } });

    const overLimit = await sdkError(anthropic(gw, await newKey({ monthly_limit_usd: '0.000001' })).messages.create(HELLO));
    expect(overLimit).toBeInstanceOf(Anthropic.APIError);
    expect([overLimit.status, overLimit.error]).toEqual([402, { type: 'error', error: expect.objectContaining({ type: 'billing_error', code: 'key_limit_reached' }) }]);

    expect(fake.requests).toHaveLength(calls);
    await expectUncharged(accountId, 1_000_000n);
    expect((await anthropic(gw, accountKey).messages.create(HELLO)).type).toBe('message');
  });

  it('404 not_found_error for another method on the route; 413 request_too_large for a body over the limit', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const client = anthropic(gw, key);
    const notFound = await sdkError(client.get('/v1/messages'));
    expect(notFound).toBeInstanceOf(Anthropic.NotFoundError);
    expect(notFound.error).toMatchObject({ type: 'error', error: { type: 'not_found_error', code: 'not_found' } });
    const limit = gw.config.limits.json_body_max_bytes;
    const tooLarge = await sdkError(client.messages.create({ ...HELLO, messages: [{ role: 'user', content: 'x'.repeat(limit) }] }));
    expect(tooLarge).toBeInstanceOf(Anthropic.ContentTooLargeError);
    expect(tooLarge.error).toMatchObject({ type: 'error', error: { type: 'request_too_large', code: 'payload_too_large' } });
  });

  it('upstream failures: 502 api_error (InternalServerError, upstream_error) for a failed or silent upstream, the upstream 4xx passed through; nothing charged', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const client = anthropic(gw, key);
    fake.failNext('status500');
    const bad = await sdkError(client.messages.create(HELLO));
    expect(bad).toBeInstanceOf(Anthropic.InternalServerError);
    expect([bad.status, bad.error]).toEqual([502, { type: 'error', error: expect.objectContaining({ type: 'api_error', code: 'upstream_error' }) }]);
    fake.failNext('hang');
    const slow = await sdkError(client.messages.create(HELLO));
    // A silent upstream is chat's 502 upstream_error too (504 is transcription's).
    expect([slow.status, slow.error]).toEqual([502, { type: 'error', error: expect.objectContaining({ type: 'api_error', code: 'upstream_error' }) }]);
    fake.failNext('status4xx');
    const rejected = await sdkError(client.messages.create(HELLO));
    expect(rejected).toBeInstanceOf(Anthropic.BadRequestError);
    expect(rejected.error).toMatchObject({ error: { type: 'invalid_request_error', code: 'upstream_rejected', message: expect.stringContaining('fake upstream rejected') } });
    await expectUncharged(accountId, 1_000_000n);
  });

  it('a stream the upstream breaks after the first byte ends with an error event (the SDK throws APIError with our code); nothing charged', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply = { content: 'one two three four five six seven eight', promptTokens: 11, completionTokens: 8 };
    fake.failNext('midStreamFailure');
    const err = await sdkError(anthropic(gw, key).messages.stream(HELLO).finalMessage());
    expect(err).toBeInstanceOf(APIError);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'api_error', code: 'upstream_error' } });

    fake.failNext('midStreamFailure');
    const events = parseNamedEvents(await (await postMessages(gw, key, { ...HELLO, stream: true })).text());
    expect(events[0].event).toBe('message_start');
    expect(events.at(-1)).toEqual({ event: 'error', data: { type: 'error', error: expect.objectContaining({ type: 'api_error', code: 'upstream_error' }) } });
    expect(events.some((e) => e.event === 'message_stop')).toBe(false);
    await expectUncharged(accountId, 1_000_000n);
    const rows = await waitForUsageRows(db, accountId, 2);
    expect(rows.map((r) => [r.endpoint, r.error_code, r.cost_micros])).toEqual(Array(2).fill(['/v1/messages', 'upstream_error', '0']));
  });

  it('503 api_error (ServiceUnavailableError, upstream_unavailable) with Retry-After once every deployment of the model is out', async () => {
    fake.failureByModel[upstreamModelOf(BROKEN)] = 'status500';
    let unavailable: APIError | null = null;
    for (let i = 0; i < 10 && !unavailable; i++) {
      const { key } = await admin.createAccount({ creditsUsd: '1' });
      const err = await sdkError(anthropic(gw, key).messages.create({ ...HELLO, model: BROKEN.id }));
      if (err.status === 503) unavailable = err;
      else expect(err.error).toMatchObject({ error: { code: 'upstream_error' } });
    }
    expect(unavailable).toBeInstanceOf(Anthropic.ServiceUnavailableError);
    expect(unavailable!.error).toMatchObject({ type: 'error', error: { type: 'api_error', code: 'upstream_unavailable' } });
    expect(Number(unavailable!.headers?.get('retry-after'))).toBeGreaterThan(0);
  });

  it('429 rate_limit_error (RateLimitError) with Retry-After once the burst limit is spent', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const client = anthropic(gw, key);
    let limited: APIError | null = null;
    for (let i = 0; i < 10 && !limited; i++) {
      try {
        await client.messages.create(HELLO);
      } catch (err) {
        limited = err as APIError;
      }
    }
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect(limited!.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', code: 'rate_limit_exceeded' } });
    expect(Number(limited!.headers?.get('retry-after'))).toBeGreaterThan(0);
  });
});
