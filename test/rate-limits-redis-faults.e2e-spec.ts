import { readFileSync } from 'node:fs';
import { COMMAND_TIMEOUT_MS } from '../src/burst-limit/fixed-window-redis-storage';
import { FAILURES_TO_OPEN, OUTAGE_LOG_INTERVAL_MS } from '../src/burst-limit/redis-breaker';
import { AdminClient } from './support/admin-client';
import { OwnGateway, startOwnGateway } from './support/own-gateway';
import { OwnRedis, startOwnRedis } from './support/own-redis';
import { RawConfig, TEST_ADMIN_TOKEN } from './support/test-app';

/**
 * rpm and tpm (DESIGN.md 12.4) when their Redis goes away: they follow the burst limit's rules (DESIGN.md 9,
 * docs/operations.md "Rate limits (rpm, tpm) when Redis fails"). Redis killed or hung (SIGSTOP), requests are let
 * through without their limits and without x-ratelimit-* headers, none waits for Redis once the breaker is open,
 * each is counted in gateway_rate_limit_store_failures_total, the outage is logged at most once per 10 s; Redis
 * back, the limits apply again. The gateway runs in a process of its own (timed, as in chat-burst-faults), and the
 * bounds are chat-burst-faults' own, which hold on a loaded 2-core machine.
 */
jest.setTimeout(120_000);

const RPM = 3;
const TPM = 100_000;
/** The shortest a request would wait for a Redis that is down: the stores' connect timeout (500 ms). */
const REDIS_WAIT_MS = 500;
/** The limits are back within this long of Redis answering again (a probe every 500 ms, reconnects up to 1 s apart). */
const LIMITS_BACK_MS = 5000;
const OUTAGE_LINE = 'Redis for rate-limit windows unavailable';
const RATE_HEADERS = ['limit', 'remaining', 'reset'].flatMap((part) => ['requests', 'tokens'].map((m) => `x-ratelimit-${part}-${m}`));

function limits(raw: RawConfig): void {
  raw.rate_limits = { keys: { rpm: RPM }, accounts: { tpm: TPM } };
  // The burst limit shares the Redis (and fails open with it): kept far away, so that only rpm and tpm refuse.
  raw.limits.chat_burst = { requests: 10_000, window_s: 10 };
}

interface Answer {
  status: number;
  code: string | null;
  ms: number;
  /** The x-ratelimit-* headers the answer carried (none: {}). */
  rate: Record<string, string>;
}

/** A cheap, valid chat request answered by the built-in dev-echo model, timed by the client. */
async function chat(gw: OwnGateway, key: string): Promise<Answer> {
  const started = performance.now();
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'dev-echo', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
  });
  const body = (await res.json()) as { error?: { code: string } };
  const rate: Record<string, string> = {};
  for (const name of RATE_HEADERS) if (res.headers.has(name)) rate[name] = res.headers.get(name)!;
  return { status: res.status, code: body.error?.code ?? null, ms: performance.now() - started, rate };
}

async function sequential(gw: OwnGateway, key: string, count: number): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let i = 0; i < count; i++) answers.push(await chat(gw, key));
  return answers;
}

/** A key (its own account) at its rpm: RPM requests admitted with the headers, the next one refused. */
async function keyAtItsLimit(gw: OwnGateway, admin: AdminClient): Promise<string> {
  const { key } = await admin.createAccount({ creditsUsd: 1 });
  const answers = await sequential(gw, key, RPM + 1);
  expect(answers.map((a) => [a.status, a.code, a.rate['x-ratelimit-remaining-requests'] ?? null])).toEqual([
    ...Array.from({ length: RPM }, (_, i) => [200, null, String(RPM - 1 - i)]),
    [429, 'rate_limit_exceeded', '0'],
  ]);
  return key;
}

async function storeFailures(gw: OwnGateway): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith('gateway_rate_limit_store_failures_total '));
  if (!line) throw new Error('No gateway_rate_limit_store_failures_total in /metrics');
  return Number(line.split(' ')[1]);
}

/** When each outage line of the rate limits was logged (the gateway's JSON log lines' `time`, ms). */
function outageLines(gw: OwnGateway): number[] {
  return readFileSync(gw.process.options.logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes(OUTAGE_LINE))
    .map((line) => (JSON.parse(line) as { time: number }).time);
}

/** The outage lines so far are at least 10 s apart: one outage or several, never more often. */
function expectOutageLinesSpaced(gw: OwnGateway): void {
  const lines = outageLines(gw);
  for (let i = 1; i < lines.length; i++) expect(lines[i] - lines[i - 1]).toBeGreaterThanOrEqual(OUTAGE_LOG_INTERVAL_MS);
}

/** Resolves once the gateway's log holds `text` (lines are flushed every 200 ms); false after 2 s. */
async function logged(gw: OwnGateway, text: string): Promise<boolean> {
  for (const from = Date.now(); Date.now() - from < 2000; await sleep(50)) {
    if (readFileSync(gw.process.options.logFile, 'utf8').includes(text)) return true;
  }
  return false;
}

/**
 * Requests every 100 ms on `key` until one is counted again (carries the x-ratelimit-* headers): what the answers
 * were, and when (ms from the call) the first counted one came. Gives up after LIMITS_BACK_MS + 2 s.
 */
async function untilCounted(gw: OwnGateway, key: string): Promise<{ before: Answer[]; counted: Answer | null; afterMs: number }> {
  const from = Date.now();
  const before: Answer[] = [];
  while (Date.now() - from < LIMITS_BACK_MS + 2000) {
    const answer = await chat(gw, key);
    if (answer.rate['x-ratelimit-limit-requests']) return { before, counted: answer, afterMs: Date.now() - from };
    before.push(answer);
    await sleep(100);
  }
  return { before, counted: null, afterMs: Date.now() - from };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const statuses = (answers: Answer[]) => answers.map((a) => `${a.status} ${a.code ?? ''}`.trim());

describe('rate limits (rpm, tpm) when their Redis goes away', () => {
  let redis: OwnRedis;
  let gw: OwnGateway;
  let admin: AdminClient;

  beforeAll(async () => {
    redis = await startOwnRedis();
    // info: the line that says Redis is back is one.
    gw = await startOwnGateway({ config: limits, redisUrl: redis.url, logLevel: 'info' });
    admin = new AdminClient(gw.url);
    // Warm-up: a fresh gateway's first chats are slow (compilation), which would blur the timings below.
    await sequential(gw, (await admin.createAccount({ creditsUsd: 1 })).key, 2);
  });
  afterAll(async () => {
    await gw?.stop();
    await redis?.stop();
  });

  afterEach(async () => {
    expect(gw.process.exit).toBeNull();
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
  });

  it('Redis killed: lets a key over its rpm through without headers, fast, counting each; Redis back: a fresh window', async () => {
    const key = await keyAtItsLimit(gw, admin);
    const failuresBefore = await storeFailures(gw);

    await redis.kill();
    const killedAt = Date.now();
    const down = await sequential(gw, key, 15);
    // Down longer than the outage log's interval, a request every 250 ms: background reconnects and probes fail
    // meanwhile; requests still go through without waiting for them, and a second line is due.
    while (Date.now() - killedAt < OUTAGE_LOG_INTERVAL_MS + 2000) {
      await sleep(250);
      down.push(await chat(gw, key));
    }

    expect(statuses(down)).toEqual(Array(down.length).fill('200'));
    expect(down.filter((a) => Object.keys(a.rate).length > 0)).toEqual([]);
    // No request waits for Redis: one that did would wait the connect timeout (500 ms) at least.
    expect(Math.max(...down.map((a) => a.ms))).toBeLessThan(REDIS_WAIT_MS);
    // Each request let through is counted once: nothing else asks the windows.
    expect((await storeFailures(gw)) - failuresBefore).toBe(down.length);
    // Logged when it began and once more after 10 s (checked for spacing below), with the requests let through since.
    const log = readFileSync(gw.process.options.logFile, 'utf8');
    expect(outageLines(gw).length).toBeGreaterThanOrEqual(2);
    expect(log).toMatch(/Redis for rate-limit windows unavailable, chat requests are let through without their rpm and tpm \([1-9]\d* since the last line\)/);

    await redis.restart();
    // An empty Redis (nothing persisted): the first request counted again opens a fresh window, so the key that
    // was over its rpm gets RPM requests again, then is refused.
    const back = await untilCounted(gw, key);
    expect(statuses(back.before).every((s) => s === '200')).toBe(true);
    expect(back.counted).toMatchObject({ status: 200, rate: { 'x-ratelimit-limit-requests': String(RPM), 'x-ratelimit-remaining-requests': String(RPM - 1) } });
    expect(back.afterMs).toBeLessThanOrEqual(LIMITS_BACK_MS);
    const rest = await sequential(gw, key, RPM);
    expect(rest.map((a) => [a.status, a.code, a.rate['x-ratelimit-remaining-requests']])).toEqual([
      ...Array.from({ length: RPM - 1 }, (_, i) => [200, null, String(RPM - 2 - i)]),
      [429, 'rate_limit_exceeded', '0'],
    ]);
    expect((await storeFailures(gw)) - failuresBefore).toBe(down.length + back.before.length);
    expectOutageLinesSpaced(gw);
    expect(await logged(gw, 'Redis for rate-limit windows is back; rpm and tpm apply again')).toBe(true);
  });

  it('Redis hung (SIGSTOP): lets requests through within the deadline, then without waiting once the breaker is open; limits again once it answers', async () => {
    const key = await keyAtItsLimit(gw, admin);
    const fresh = (await admin.createAccount({ creditsUsd: 1 })).key;
    const failuresBefore = await storeFailures(gw);
    redis.pause();
    let hung: Answer[];
    try {
      hung = await sequential(gw, key, 10);
    } finally {
      redis.resume();
    }
    expect(statuses(hung)).toEqual(Array(10).fill('200'));
    expect(hung.filter((a) => Object.keys(a.rate).length > 0)).toEqual([]);
    // The first requests wait for Redis up to the command timeout, until FAILURES_TO_OPEN of them in a row have
    // failed; the burst limit asks the same Redis first and waits as long, so one request waits two deadlines.
    expect(Math.max(...hung.slice(0, FAILURES_TO_OPEN).map((a) => a.ms))).toBeLessThan(2 * COMMAND_TIMEOUT_MS + 500);
    // From then on none asks Redis: one that did would wait the command timeout (1 s); 750 ms leaves the load room.
    expect(Math.max(...hung.slice(FAILURES_TO_OPEN).map((a) => a.ms))).toBeLessThan(COMMAND_TIMEOUT_MS * 0.75);
    expect((await storeFailures(gw)) - failuresBefore).toBe(10);

    // Redis answers again (it kept its windows): the probe closes the breaker and the limits apply.
    const back = await untilCounted(gw, fresh);
    expect(statuses(back.before).every((s) => s === '200')).toBe(true);
    expect(back.counted).toMatchObject({ status: 200, rate: { 'x-ratelimit-limit-requests': String(RPM), 'x-ratelimit-remaining-requests': String(RPM - 1) } });
    expect(back.afterMs).toBeLessThanOrEqual(LIMITS_BACK_MS);
    expect(await chat(gw, key)).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
    // Begun within 10 s of another outage's line (the breaker's log spans outages), this one is in the counter only.
    expectOutageLinesSpaced(gw);
  });
});
