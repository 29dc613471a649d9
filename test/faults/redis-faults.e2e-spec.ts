import { FaultCluster, useFaultCluster, withReplicaLogs } from '../support/fault-cluster';
import { chargedAmong, moneyInvariantViolations, servedCostMicros, waitUntilChargedExactlyOnce } from '../support/fault-money';
import { TEST_ADMIN_TOKEN } from '../support/test-app';
import { Outcome, sleep, startLoad, summarize, timedChat, timedGet } from '../support/fault-requests';

/**
 * Redis killed (SIGKILL) and restarted under two gateway processes. DESIGN.md section 9 and issue 13
 * item 4: the burst limit fails open, costing each request at most 50 ms; no replica dies; the limit
 * applies again within 5 s of Redis answering.
 */
jest.setTimeout(120_000);

const BURST = { requests: 20, window_s: 2 };
const ADDED_LATENCY_BOUND_MS = 50;
const LIMIT_BACK_BOUND_MS = 5000;
const REDIS_DOWN_MS = 3000;
/** The shortest a request would wait for a Redis that is down: the storage's connect timeout (500 ms). */
const REDIS_WAIT_MS = 500;

describe('Faults: Redis (2 gateway processes)', () => {
  let cluster: FaultCluster;
  const timings = useFaultCluster({ replicas: 2, burst: BURST }, 'Redis fault timings', (started) => (cluster = started));

  /** Sequential chats from a fresh account, alternating replicas: `count` of them, for at least `minMs`. */
  async function sequentialChats(count: number, minMs = 0): Promise<Outcome[]> {
    const key = await accountKeyKnownToEveryReplica();
    const outcomes: Outcome[] = [];
    const started = Date.now();
    for (let i = 0; i < count || Date.now() - started < minMs; i++) {
      outcomes.push(await timedChat(cluster.gateways[i % cluster.gateways.length], key));
      if (minMs) await sleep(10);
    }
    return outcomes;
  }

  /** The key of a fresh account, already looked up by every replica (so no chat waits for its first lookup). */
  async function accountKeyKnownToEveryReplica(): Promise<string> {
    const { key } = await cluster.admin.createAccount({ creditsUsd: 20 });
    for (const g of cluster.gateways) expect((await timedGet(`${g.url}/v1/models`, key)).status).toBe(200);
    return key;
  }

  /**
   * One more chat than the limit, all in flight at once, alternating replicas. Their admissions fall within a
   * fraction of the 2 s window on any machine; sent one after another, 21 chats on a loaded CI machine took longer
   * than the window, whose end let the 21st through (a CI run saw 21 × 200).
   */
  async function overLimitBurst(key: string): Promise<Outcome[]> {
    const count = BURST.requests + 1;
    return Promise.all(Array.from({ length: count }, (_, i) => timedChat(cluster.gateways[i % cluster.gateways.length], key, { closeConnection: true })));
  }

  const failuresCounted = async (url: string): Promise<number> => {
    const { body } = await timedGet(`${url}/metrics`, TEST_ADMIN_TOKEN);
    const match = /^gateway_burst_limit_store_failures_total(?:\{[^}]*\})? (\d+)/m.exec(String(body));
    return match ? Number(match[1]) : 0;
  };

  it(
    'Redis killed under load: no replica dies, the limit fails open at ≤ 50 ms per request, and applies again within 5 s of Redis returning',
    withReplicaLogs(
      () => cluster,
      async () => {
        // With Redis up: the limit applies (of 21 requests in a window, 20 are served and one refused, whichever
        // replica each reaches), and the latency of a served request.
        const limited = await overLimitBurst(await accountKeyKnownToEveryReplica());
        expect(limited.map((o) => o.status).sort()).toEqual([...Array(BURST.requests).fill(200), 429]);
        expect(limited.filter((o) => o.status === 429).map((o) => o.code)).toEqual(['rate_limit_exceeded']);
        const baseline = await sequentialChats(BURST.requests - 2);
        expect(baseline.every((o) => o.status === 200)).toBe(true);
        const baselineMax = Math.max(...baseline.map((o) => o.ms));
        const failuresBefore = await Promise.all(cluster.gateways.map((g) => failuresCounted(g.url)));

        const { key: loadKey } = await cluster.admin.createAccount({ creditsUsd: 20 });
        const load = startLoad(cluster.gateways, loadKey, { workers: 1, pauseMs: 150 });
        await sleep(300);
        await cluster.redis.kill();
        const killedAt = Date.now();

        // Redis down for 3 s: more than the limit in one window, every one served, none slowed by more than 50 ms.
        const open = await sequentialChats(BURST.requests * 2, REDIS_DOWN_MS);
        const downFor = Date.now() - killedAt;
        const failuresDuring = await Promise.all(cluster.gateways.map((g) => failuresCounted(g.url)));
        for (const g of cluster.gateways) expect({ replica: g.name, exit: g.exit }).toEqual({ replica: g.name, exit: null });

        await cluster.redis.restart();
        const backAt = Date.now();
        // Redis back: a client sending bursts over the limit meets it again within 5 s.
        const { key } = await cluster.admin.createAccount({ creditsUsd: 20 });
        let refusedAt: number | null = null;
        const afterRestart: Outcome[] = [];
        while (refusedAt === null && Date.now() - backAt < LIMIT_BACK_BOUND_MS + 2000) {
          const burst = await overLimitBurst(key);
          afterRestart.push(...burst);
          const refused = burst.filter((o) => o.status === 429).map((o) => o.endedAt);
          if (refused.length) refusedAt = Math.min(...refused);
        }
        const loadOutcomes = await load.stop();

        const slowest = Math.max(...open.map((o) => o.ms));
        timings.push(
          `redis kill: baseline max ${baselineMax} ms (p50 ${median(baseline)} ms); Redis down ${downFor} ms: ${open.length} requests, ` +
            `p50 ${median(open)} ms, max ${slowest} ms; limit refused again ${refusedAt === null ? 'never' : `${refusedAt - backAt} ms`} after Redis answered ` +
            `(${afterRestart.length} requests)\nbackground load:\n${summarize(loadOutcomes)}`,
        );

        expect(open.filter((o) => o.status !== 200 || o.clientError).map((o) => `${o.replica} ${o.status} ${o.code} ${o.clientError}`)).toEqual([]);
        // The limiter's cost per request, as the 95th percentile: on a loaded 2-core machine a replica's process
        // is stalled now and then for 100-250 ms (GC, the other processes' CPU), Redis or not (CI saw one such
        // request among 159, with the background load on that replica stalled at the same moment). What the
        // bound is there to catch, requests waiting for a Redis that is down, would be all of them, or one per
        // probe (every 0.5 s, a few per cent), and each would wait the connect or command timeout: none may come
        // near the shorter of the two.
        const sorted = open.map((o) => o.ms).sort((a, b) => a - b);
        expect(sorted[Math.floor(sorted.length * 0.95)]).toBeLessThanOrEqual(baselineMax + ADDED_LATENCY_BOUND_MS);
        expect(open.filter((o) => o.ms >= REDIS_WAIT_MS).map((o) => `${o.replica} ${o.ms} ms`)).toEqual([]);
        expect(failuresDuring.map((n, i) => n > failuresBefore[i])).toEqual(cluster.gateways.map(() => true));
        expect(refusedAt).not.toBeNull();
        expect(refusedAt! - backAt).toBeLessThanOrEqual(LIMIT_BACK_BOUND_MS);
        expect(loadOutcomes.filter((o) => o.status !== 200 || o.clientError)).toEqual([]);
        for (const g of cluster.gateways) {
          expect({ replica: g.name, exit: g.exit, healthz: (await timedGet(`${g.url}/healthz`)).status }).toEqual({
            replica: g.name,
            exit: null,
            healthz: 200,
          });
        }
        // Let through or limited, each request served was charged once, the cost of the fake's tokens; refused ones nothing.
        const all = [...limited, ...baseline, ...open, ...afterRestart, ...loadOutcomes];
        const served = all.filter((o) => o.status === 200).map((o) => o.requestId!);
        expect(await waitUntilChargedExactlyOnce(cluster, served, servedCostMicros(cluster))).toEqual([]);
        expect(await chargedAmong(cluster, all.filter((o) => o.status !== 200 && o.requestId).map((o) => o.requestId!))).toEqual([]);
        await sleep(1500);
        expect(await moneyInvariantViolations(cluster)).toEqual([]);
      },
    ),
  );
});

function median(outcomes: Outcome[]): number {
  const sorted = outcomes.map((o) => o.ms).sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
