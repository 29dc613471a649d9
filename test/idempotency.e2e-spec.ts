import { moneyOf, PricedModel, useFakeGateway, waitForUsageRows } from './support/chat-support';

/**
 * Idempotency-Key (issue 35 item 1, DESIGN.md section 11) in one gateway: a repeat gets the first answer byte for
 * byte with no upstream call and no charge; a repeat while the first runs gets 409; another body or route under
 * the key 400; an answer that ended in an error is not kept; keys are per account.
 */
const MODEL: PricedModel = { id: 'idem-chat', input: 2, output: 10, maxOutput: 500 };

describe('Idempotency-Key', () => {
  const suite = useFakeGateway([MODEL]);
  beforeEach(() => suite.fake.resetState());

  const chatBody = (content = 'hello') => ({ model: MODEL.id, messages: [{ role: 'user', content }] });

  async function post(key: string, path: string, body: unknown, idempotencyKey?: string, headers: Record<string, string> = {}) {
    const res = await fetch(`${suite.gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(idempotencyKey !== undefined && { 'idempotency-key': idempotencyKey }), ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
  }
  const json = (r: { bytes: Buffer }) => JSON.parse(r.bytes.toString('utf8'));

  it('replays a JSON answer byte for byte (ids included), with one upstream call and one charge; the replay is recorded at cost 0', async () => {
    const { accountId, key } = await suite.admin.createAccount({ creditsUsd: '1' });
    const first = await post(key, '/v1/chat/completions', chatBody(), 'order-123');
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await post(key, '/v1/chat/completions', chatBody(), 'order-123');
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.bytes.equals(first.bytes)).toBe(true);
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(again.headers.get('x-gateway-cost-usd')).toBe(first.headers.get('x-gateway-cost-usd'));
    expect(suite.fake.requests).toHaveLength(1);
    const money = await moneyOf(suite.db, accountId);
    expect(money.charges).toHaveLength(1);
    expect(money.ledgerSum).toBe(money.balance);
    const rows = await waitForUsageRows(suite.db, accountId, 2);
    // The first charged, the replay at cost 0 (in whichever order they were written).
    expect(rows.map((r) => [r.status, r.cost_micros === '0', r.model]).sort()).toEqual([
      [200, false, MODEL.id],
      [200, true, MODEL.id],
    ]);
  });

  it('replays a stream byte for byte, every event and id as the first', async () => {
    const { accountId, key } = await suite.admin.createAccount({ creditsUsd: '1' });
    const body = { ...chatBody('stream me'), stream: true, stream_options: { include_usage: true } };
    const first = await post(key, '/v1/chat/completions', body, 'stream-1');
    const again = await post(key, '/v1/chat/completions', body, 'stream-1');
    expect(first.status).toBe(200);
    expect(again.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.bytes.toString()).toBe(first.bytes.toString());
    expect(first.bytes.toString()).toContain('data: [DONE]');
    expect(suite.fake.requests).toHaveLength(1);
    expect((await moneyOf(suite.db, accountId)).charges).toHaveLength(1);
  });

  it('replays Responses, Messages and speech answers too', async () => {
    const { key } = await suite.admin.createAccount({ creditsUsd: '1', subscription: 'active' });
    const cases: [string, unknown, Record<string, string>][] = [
      ['/v1/responses', { model: MODEL.id, input: 'hi' }, {}],
      ['/v1/messages', { model: MODEL.id, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }, { 'anthropic-version': '2023-06-01' }],
      ['/v1/audio/speech', { model: 'local-tts', input: 'Hello there.', voice: 'alloy', response_format: 'wav' }, {}],
    ];
    for (const [path, body, headers] of cases) {
      const first = await post(key, path, body, `k-${path}`, headers);
      expect(first.status).toBe(200);
      const again = await post(key, path, body, `k-${path}`, headers);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.bytes.equals(first.bytes)).toBe(true);
    }
    expect(suite.fake.requests).toHaveLength(2);
  });

  it('answers 409 idempotency_in_progress with Retry-After while the first runs, then its answer', async () => {
    const { accountId, key } = await suite.admin.createAccount({ creditsUsd: '1' });
    // The first stays open at the upstream until the repeat has had its answer: no timing window.
    const release = suite.fake.gate.hold();
    const first = post(key, '/v1/chat/completions', chatBody(), 'slow');
    try {
      await suite.fake.waitFor(() => suite.fake.requests.length === 1);
      const during = await post(key, '/v1/chat/completions', chatBody(), 'slow');
      expect(during.status).toBe(409);
      expect(json(during).error).toMatchObject({ code: 'idempotency_in_progress', param: 'Idempotency-Key' });
      expect(Number(during.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(suite.fake.requests).toHaveLength(1);
    } finally {
      release();
    }
    const answered = await first;
    const after = await post(key, '/v1/chat/completions', chatBody(), 'slow');
    expect(after.bytes.equals(answered.bytes)).toBe(true);
    expect(suite.fake.requests).toHaveLength(1);
    expect((await moneyOf(suite.db, accountId)).charges).toHaveLength(1);
  });

  it('refuses the key with another body or another route: 400 idempotency_key_reused, nothing run', async () => {
    const { key } = await suite.admin.createAccount({ creditsUsd: '1' });
    expect((await post(key, '/v1/chat/completions', chatBody('one'), 'reused')).status).toBe(200);
    const otherBody = await post(key, '/v1/chat/completions', chatBody('two'), 'reused');
    expect(otherBody.status).toBe(400);
    expect(json(otherBody).error).toMatchObject({ code: 'idempotency_key_reused', param: 'Idempotency-Key' });
    const otherRoute = await post(key, '/v1/responses', { model: MODEL.id, input: 'one' }, 'reused');
    expect(otherRoute.status).toBe(400);
    expect(json(otherRoute).error.code).toBe('idempotency_key_reused');
    const messages = await post(key, '/v1/messages', { model: MODEL.id, max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, 'reused');
    // Anthropic's envelope on its route, with the same code.
    expect(json(messages)).toMatchObject({ type: 'error', error: { code: 'idempotency_key_reused' } });
    expect(suite.fake.requests).toHaveLength(1);
  });

  it('does not keep an answer that ended in an error: its repeat runs anew and is charged once', async () => {
    const { accountId, key } = await suite.admin.createAccount({ creditsUsd: '1' });
    suite.fake.failNext('status500');
    expect((await post(key, '/v1/chat/completions', chatBody(), 'retry-me')).status).toBe(502);
    const retried = await post(key, '/v1/chat/completions', chatBody(), 'retry-me');
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    // A stream that failed after its first bytes (in-band error) is not kept either.
    const body = { ...chatBody('broken stream'), stream: true };
    suite.fake.failNext('midStreamFailure');
    const broken = await post(key, '/v1/chat/completions', body, 'broken-stream');
    expect(broken.bytes.toString()).toContain('"error"');
    const whole = await post(key, '/v1/chat/completions', body, 'broken-stream');
    expect(whole.headers.get('idempotent-replayed')).toBeNull();
    expect(whole.bytes.toString()).toContain('[DONE]');
    expect(suite.fake.requests).toHaveLength(4);
    expect((await moneyOf(suite.db, accountId)).charges).toHaveLength(2);
  });

  it('keeps keys per account, and refuses a malformed key', async () => {
    const a = await suite.admin.createAccount({ creditsUsd: '1' });
    const b = await suite.admin.createAccount({ creditsUsd: '1' });
    expect((await post(a.key, '/v1/chat/completions', chatBody(), 'shared-key')).status).toBe(200);
    const other = await post(b.key, '/v1/chat/completions', chatBody(), 'shared-key');
    expect(other.status).toBe(200);
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    expect(suite.fake.requests).toHaveLength(2);
    for (const bad of ['', 'x'.repeat(256), 'has space', 'naïve']) {
      const res = await fetch(`${suite.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json', 'idempotency-key': encodeURI(bad) === bad || bad === '' ? bad : Buffer.from(bad, 'utf8').toString('latin1') },
        body: JSON.stringify(chatBody()),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error).toMatchObject({ code: 'invalid_request_error', param: 'Idempotency-Key' });
    }
  });
});
