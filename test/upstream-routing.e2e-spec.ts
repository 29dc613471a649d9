import { costMicros, moneyOf, parseSseData, postChat, sdk, waitForUsageRows } from './support/chat-support';
import { FailureMode, RateLimitKind } from './support/fake-upstream';
import { callsTo, deploymentColumns, RoutedModel, useRoutingGateway } from './support/routing-support';

const price = { input: 2, output: 100, maxOutput: 4096 };
// `a` first (priority 0), `b` the fallback: which deployment is tried first is certain.
const FAILOVER: RoutedModel = { id: 'failover', ...price, failure_threshold: 1000, deployments: [{ upstream: 'a', model: 'fo-a' }, { upstream: 'b', model: 'fo-b', priority: 1 }] };
const REFUSED_FIRST: RoutedModel = { id: 'refused-first', ...price, deployments: [{ upstream: 'refused', model: 'rf-x' }, { upstream: 'b', model: 'rf-b', priority: 1 }] };
const WEIGHTED: RoutedModel = { id: 'weighted', ...price, deployments: [{ upstream: 'a', model: 'w-a', weight: 3 }, { upstream: 'b', model: 'w-b' }] };
const HALF_DOWN: RoutedModel = { id: 'half-down', ...price, deployments: [{ upstream: 'refused', model: 'hd-x' }, { upstream: 'b', model: 'hd-b' }] };
const SLOW: RoutedModel = { id: 'slow-first', ...price, deployments: [{ upstream: 'a', model: 'slow-a' }, { upstream: 'b', model: 'slow-b', priority: 1 }] };

const hi = { messages: [{ role: 'user' as const, content: 'hi' }] };

describe('upstream routing over several deployments', () => {
  const suite = useRoutingGateway([FAILOVER, REFUSED_FIRST, WEIGHTED, HALF_DOWN, SLOW]);

  it('spreads requests by weight (3:1 within 5 points over 1,000 requests)', async () => {
    const { a, b, gw, admin } = suite;
    const { key } = await admin.createAccount({ creditsUsd: '100' });
    const client = sdk(gw, key);
    for (let i = 0; i < 1000; i++) await client.chat.completions.create({ model: WEIGHTED.id, ...hi });
    const share = callsTo(a, 'w-a') / 1000;
    expect(callsTo(a, 'w-a') + callsTo(b, 'w-b')).toBe(1000);
    expect(share).toBeGreaterThan(0.7);
    expect(share).toBeLessThan(0.8);
  }, 60_000);

  it.each<[string, FailureMode, RateLimitKind | undefined]>([
    ['answers 500', 'status500', undefined],
    ['answers 429 on requests', 'status429', 'requests'],
    ['answers 429 on tokens', 'status429', 'tokens'],
    ['answers 429 insufficient_quota', 'status429', 'insufficient_quota'],
    ['hangs past its request timeout', 'hang', undefined],
    ['resets the connection before answering', 'reset', undefined],
  ])('retries elsewhere when a deployment %s: 200, the serving attempt charged, the failed one not', async (_name, mode, rateLimit) => {
    const { a, b, gw, admin, db } = suite;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    a.failureByModel['fo-a'] = mode;
    if (rateLimit) a.rateLimit = rateLimit;
    b.reply = { content: 'Served by b.', promptTokens: 30, completionTokens: 3 };
    const answer = await sdk(gw, key).chat.completions.create({ model: FAILOVER.id, ...hi });
    expect(answer.choices[0].message.content).toBe('Served by b.');
    expect([callsTo(a, 'fo-a'), callsTo(b, 'fo-b')]).toEqual([1, 1]);
    const charge = costMicros(FAILOVER, 30, 3);
    const money = await moneyOf(db, accountId);
    expect(money.charges.map((c) => c.amount)).toEqual([charge]);
    expect(money).toMatchObject({ balance: 1_000_000n - charge, reserved: 0n, openHolds: 0 });
    await waitForUsageRows(db, accountId, 1);
    expect(await deploymentColumns(db, accountId)).toEqual([{ deployment: 'b/fo-b', attempts: 2, cost_micros: String(charge), status: 200 }]);
  });

  it('retries elsewhere when a deployment refuses connections', async () => {
    const { b, gw, admin, db } = suite;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const answer = await sdk(gw, key).chat.completions.create({ model: REFUSED_FIRST.id, ...hi });
    expect(answer.choices[0].message.content).toBe('Hello from the fake upstream.');
    expect(callsTo(b, 'rf-b')).toBe(1);
    await waitForUsageRows(db, accountId, 1);
    expect(await deploymentColumns(db, accountId)).toEqual([expect.objectContaining({ deployment: 'b/rf-b', attempts: 2, status: 200 })]);
    const usage = await admin.usage(accountId);
    expect(usage.by_deployment).toEqual([{ model: REFUSED_FIRST.id, deployment: 'b/rf-b', requests: 1, failed: 0, attempts: 2, retried: 1, cost_usd: expect.any(String) }]);
  });

  it('passes a 400 through without trying another deployment, charging nothing', async () => {
    const { a, b, gw, admin, db } = suite;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    a.failureByModel['fo-a'] = 'status4xx';
    const err = await sdk(gw, key).chat.completions.create({ model: FAILOVER.id, ...hi }).catch((e) => e);
    expect(err).toMatchObject({ status: 400, code: 'upstream_rejected' });
    expect([callsTo(a, 'fo-a'), callsTo(b, 'fo-b')]).toEqual([1, 0]);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, charges: [], openHolds: 0 });
    await waitForUsageRows(db, accountId, 1);
    expect(await deploymentColumns(db, accountId)).toEqual([{ deployment: 'a/fo-a', attempts: 1, cost_micros: '0', status: 400 }]);
  });

  it('does not retry a stream that fails mid-way: the error goes in-band, nothing is charged', async () => {
    const { a, b, gw, admin, db } = suite;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    a.failureByModel['fo-a'] = 'midStreamFailure';
    const res = await postChat(gw, key, { model: FAILOVER.id, stream: true, ...hi });
    expect(res.status).toBe(200);
    const events = parseSseData(await res.text());
    expect(JSON.parse(events.at(-1)!).error).toMatchObject({ code: 'upstream_error' });
    expect([callsTo(a, 'fo-a'), callsTo(b, 'fo-b')]).toEqual([1, 0]);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, charges: [], openHolds: 0 });
  });

  it('starts no further attempt once the client has gone away', async () => {
    const { a, b, gw, admin, db } = suite;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    a.failureByModel['slow-a'] = 'hang';
    const abort = new AbortController();
    const pending = postChat(gw, key, { model: SLOW.id, ...hi }, { signal: abort.signal }).catch((e) => e);
    await a.waitFor(() => callsTo(a, 'slow-a') === 1);
    abort.abort();
    await pending;
    await a.waitFor(() => a.aborted().length === 1);
    // Past the hung attempt's own timeout: a retry would have reached b by now.
    await new Promise((r) => setTimeout(r, 1200));
    expect(callsTo(b, 'slow-b')).toBe(0);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, charges: [], openHolds: 0 });
  });

  it('the official SDK with its retries off sees only successes while one of two deployments is down', async () => {
    const { b, gw, admin } = suite;
    const { key } = await admin.createAccount({ creditsUsd: '10' });
    const client = sdk(gw, key);
    const answers = [];
    for (let i = 0; i < 30; i++) answers.push(await client.chat.completions.create({ model: HALF_DOWN.id, ...hi }));
    expect(answers.every((r) => r.choices[0].message.content === 'Hello from the fake upstream.')).toBe(true);
    expect(callsTo(b, 'hd-b')).toBe(30);
  });
});
