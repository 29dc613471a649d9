import { moneyOf, postChat, sdk, waitForUsageRows } from './support/chat-support';
import { callsTo, deploymentColumns, RoutedModel, useRoutingGateway } from './support/routing-support';
import { toFile } from 'openai';
import { audioFixture } from './support/audio-support';
import { TEST_ADMIN_TOKEN } from './support/test-app';

const price = { input: 2, output: 100, maxOutput: 4096 };
const BREAKER: RoutedModel = {
  id: 'breaker', ...price, failure_threshold: 3, cooldown_s: 1,
  deployments: [{ upstream: 'a', model: 'br-a' }, { upstream: 'b', model: 'br-b', priority: 1 }],
};
const FRAGILE: RoutedModel = { id: 'fragile', ...price, failure_threshold: 1, cooldown_s: 30, deployments: [{ upstream: 'a', model: 'fr-a' }, { upstream: 'b', model: 'fr-b' }] };
const LIMITED: RoutedModel = { id: 'limited', ...price, deployments: [{ upstream: 'a', model: 'lim-a' }, { upstream: 'b', model: 'lim-b', priority: 1 }] };

const hi = { messages: [{ role: 'user' as const, content: 'hi' }] };

describe('circuit breaking per deployment', () => {
  const suite = useRoutingGateway([BREAKER, FRAGILE, LIMITED], (raw) => {
    raw.catalog.push({ id: 'tts-routed', kind: 'speech', deployments: [{ provider: 'a', upstream_model: 'tts-a' }, { provider: 'b', upstream_model: 'tts-b', priority: 1 }] });
    for (const entry of raw.catalog) if (entry.kind === 'transcription') entry.active = false;
    raw.catalog.push({ id: 'stt-routed', kind: 'transcription', active: true, deployments: [{ provider: 'a', upstream_model: 'stt-a' }, { provider: 'b', upstream_model: 'stt-b', priority: 1 }] });
  });

  it('opens after the threshold (no call reaches the deployment during the cooldown), half-opens with one probe, closes on success', async () => {
    const { a, b, gw, admin } = suite;
    const { key } = await admin.createAccount({ creditsUsd: '10' });
    const ask = () => sdk(gw, key).chat.completions.create({ model: BREAKER.id, ...hi });
    a.failureByModel['br-a'] = 'status500';
    for (let i = 0; i < 3; i++) await ask();
    expect(callsTo(a, 'br-a')).toBe(3);
    for (let i = 0; i < 5; i++) await ask();
    expect([callsTo(a, 'br-a'), callsTo(b, 'br-b')]).toEqual([3, 8]);

    delete a.failureByModel['br-a'];
    a.responseDelayMs = 300;
    await new Promise((r) => setTimeout(r, 1100));
    // Half-open: one probe reaches `a` while the others go to `b`.
    await Promise.all([ask(), ask(), ask()]);
    expect([callsTo(a, 'br-a'), callsTo(b, 'br-b')]).toEqual([4, 10]);
    // The probe succeeded: closed, `a` serves again.
    a.responseDelayMs = 0;
    await ask();
    await ask();
    expect(callsTo(a, 'br-a')).toBe(6);
  });

  it('answers 503 upstream_unavailable with Retry-After and no upstream call when every deployment is out', async () => {
    const { a, b, gw, admin, db } = suite;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    a.failureByModel['fr-a'] = 'status500';
    b.failureByModel['fr-b'] = 'status500';
    const first = await postChat(gw, key, { model: FRAGILE.id, ...hi });
    expect(first.status).toBe(502);
    expect(((await first.json()) as any).error.code).toBe('upstream_error');
    expect(callsTo(a, 'fr-a') + callsTo(b, 'fr-b')).toBe(2);

    const res = await postChat(gw, key, { model: FRAGILE.id, ...hi });
    expect(res.status).toBe(503);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(28);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'upstream_unavailable', type: 'api_error' });
    expect(callsTo(a, 'fr-a') + callsTo(b, 'fr-b')).toBe(2);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, charges: [], openHolds: 0 });
    await waitForUsageRows(db, accountId, 2);
    const rows = await deploymentColumns(db, accountId);
    expect(rows.map((r) => [r.status, r.attempts, r.cost_micros])).toEqual([[502, 2, '0'], [503, null, '0']]);
  });

  it('takes a deployment out for the Retry-After of its 429', async () => {
    const { a, b, gw, admin } = suite;
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    a.failureByModel['lim-a'] = 'status429';
    a.retryAfterS = 60;
    for (let i = 0; i < 3; i++) await sdk(gw, key).chat.completions.create({ model: LIMITED.id, ...hi });
    expect([callsTo(a, 'lim-a'), callsTo(b, 'lim-b')]).toEqual([1, 3]);
  });

  it('retries speech on another deployment', async () => {
    const { a, b, gw, admin } = suite;
    const { key } = await admin.createAccount({ subscription: 'active' });
    a.failureByModel['tts-a'] = 'status500';
    const audio = await sdk(gw, key).audio.speech.create({ model: 'tts-routed', input: 'Hello.', voice: 'alloy' });
    expect(Buffer.from(await audio.arrayBuffer()).equals(b.speechAudio)).toBe(true);
    expect([callsTo(a, 'tts-a'), callsTo(b, 'tts-b')]).toEqual([1, 1]);
  });

  it('retries a transcription on another deployment, sending the whole upload again', async () => {
    const { a, b, gw, admin } = suite;
    const { key } = await admin.createAccount({ subscription: 'active' });
    a.failNext('status500');
    const file = await toFile(audioFixture('hello.wav'), 'hello.wav', { type: 'audio/wav' });
    const answer = await sdk(gw, key).audio.transcriptions.create({ model: 'whisper-1', file });
    expect(answer.text).toBe('Hello world.');
    expect([a.requests.length, b.requests.length]).toEqual([1, 1]);
    expect(b.requests[0].fields.model).toBe('stt-b');
    expect(b.requests[0].file?.size).toBe(a.requests[0].file?.size);
    expect(b.requests[0].file?.size).toBe(audioFixture('hello.wav').length);
  });

  it('GET /admin/v1/upstreams lists every deployment with its circuit, in-flight count, error rate and latency', async () => {
    const { gw } = suite;
    const res = await suite.admin.request<{ data: any[] }>('GET', '/upstreams');
    expect(res.status).toBe(200);
    const { data } = res.body;
    expect(data).toEqual(expect.arrayContaining([
      expect.objectContaining({ model: 'fragile', deployment: 'a/fr-a', state: 'open', in_flight: 0, error_rate: 1, latency_ms: expect.any(Number) }),
      expect.objectContaining({ model: 'breaker', deployment: 'a/br-a', state: 'closed', priority: 0, weight: 1 }),
    ]));
    const metrics = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } })).text();
    expect(metrics).toContain('gateway_deployment_circuit_state{model="fragile",deployment="a/fr-a"} 2');
    expect(metrics).toMatch(/gateway_deployment_retries_total\{model="breaker",deployment="b\/br-b"\} [1-9]/);
    expect(metrics).toMatch(/gateway_deployment_failures_total\{model="breaker",deployment="a\/br-a"\} 3/);
  });
});
