import { ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import Redis from 'ioredis';
import { FaultCluster, useFaultCluster, withReplicaLogs } from '../support/fault-cluster';
import { GatewayProcess } from '../support/fault-gateway';
import { Outcome, sleep, timedChat, timedGet } from '../support/fault-requests';
import { TEST_ADMIN_TOKEN } from '../support/test-app';

/**
 * Issue 22 item 3: under load, with nothing broken, the burst limit must not switch itself off. Three
 * gateway processes, one Redis, 16 clients and a CPU spinner on a 2-core machine for three minutes, as
 * long as the soak in which the issue saw 6–11 error lines per replica: every chat request is counted and
 * decided by Redis (none let through by the fail-open path), and no replica logs an error.
 */
jest.setTimeout(360_000);

/**
 * Three minutes in `npm test` (Node 26). The runtime job (`npm run test:runtime`, Node 22 and 24) sets
 * BURST_SOAK_MS to 30 s: there it checks what a runtime can change (sockets, timers, the Redis client under
 * load), not the soak's length again.
 */
const LOAD_MS = Number(process.env.BURST_SOAK_MS ?? 180_000);
// A mistyped knob would otherwise load for no time at all, and the soak would pass without a request sent.
if (!Number.isInteger(LOAD_MS) || LOAD_MS < 10_000) throw new Error(`BURST_SOAK_MS must be at least 10000 ms, not ${process.env.BURST_SOAK_MS}`);
const CLIENTS = 16;
/** Busy loops beside the gateways, so that Redis competes for the cores as on a loaded machine. */
const SPINNERS = 1;
/** Per account; one window outlasts the test, so each account's counter is the number of its requests. */
const LIMIT = 150;
const WINDOW_S = 600;
/** Requests each client sends to one account past its limit (each must be refused) before it takes a new account. */
const PAST_LIMIT = 10;
/**
 * A gateway closes a keep-alive connection idle for 5 s; a client whose event loop stalls on this loaded
 * machine can still send on it and get "other side closed" before any answer: the request never reached
 * the gateway. The openai SDK sends such a request again (twice at most); so does this client, and counts it.
 */
const CLOSED_BEFORE_ANY_ANSWER = /other side closed|ECONNRESET|socket hang up/;
const RESENDS = 2;

interface AccountRun {
  accountId: string;
  outcomes: Outcome[];
}

describe('Soak: the burst limit under load, nothing broken (3 gateway processes, one Redis)', () => {
  let cluster: FaultCluster;
  const timings = useFaultCluster({ replicas: 3, burst: { requests: LIMIT, window_s: WINDOW_S } }, 'Burst limit soak', (started) => (cluster = started));

  let resent = 0;

  /** One chat as an SDK sends it: again when the connection was closed before any answer. */
  async function chat(gateway: GatewayProcess, key: string, stream: boolean): Promise<Outcome> {
    for (let attempt = 0; ; attempt++) {
      const outcome = await timedChat(gateway, key, { stream });
      if (outcome.status !== 0 || !CLOSED_BEFORE_ANY_ANSWER.test(outcome.clientError ?? '') || attempt === RESENDS) return outcome;
      resent++;
    }
  }

  /** One client: accounts one after another, each sent LIMIT + PAST_LIMIT chats in turn over the replicas, until `until`. */
  async function client(until: number, runs: AccountRun[]): Promise<void> {
    while (Date.now() < until) {
      const { accountId, key } = await cluster.admin.createAccount({ creditsUsd: 20 });
      const run: AccountRun = { accountId, outcomes: [] };
      runs.push(run);
      for (let i = 0; i < LIMIT + PAST_LIMIT && Date.now() < until; i++) {
        run.outcomes.push(await chat(cluster.gateways[i % cluster.gateways.length], key, i % 4 === 3));
      }
    }
  }

  const storeFailures = async (url: string): Promise<number> => {
    const { body } = await timedGet(`${url}/metrics`, TEST_ADMIN_TOKEN);
    const match = /^gateway_burst_limit_store_failures_total(?:\{[^}]*\})? (\d+)/m.exec(String(body));
    if (!match) throw new Error(`no gateway_burst_limit_store_failures_total at ${url}/metrics`);
    return Number(match[1]);
  };

  /** pino lines at error level or above (level >= 50) in a replica's whole output. */
  const errorLines = (logFile: string): string[] =>
    readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((line) => {
        if (!line.startsWith('{')) return false;
        try {
          return (JSON.parse(line) as { level?: number }).level! >= 50;
        } catch {
          return false;
        }
      });

  it(
    'counts every chat request in Redis, refuses exactly those past the limit, and logs no error',
    withReplicaLogs(
      () => cluster,
      async () => {
        // Each spinner also ends by itself shortly after the load, should this test be cut short.
        const spin = `const end = Date.now() + ${LOAD_MS + 10_000}; while (Date.now() < end);`;
        const spinners: ChildProcess[] = Array.from({ length: SPINNERS }, () => spawn(process.execPath, ['-e', spin], { stdio: 'ignore' }));
        const runs: AccountRun[] = [];
        const started = Date.now();
        try {
          await Promise.all(Array.from({ length: CLIENTS }, () => client(started + LOAD_MS, runs)));
        } finally {
          for (const spinner of spinners) {
            if (spinner.exitCode !== null || spinner.signalCode !== null) continue;
            const exited = once(spinner, 'exit');
            spinner.kill('SIGKILL');
            await exited;
          }
        }
        const loadMs = Date.now() - started;
        // The replicas write their log lines at least every 200 ms.
        await sleep(1000);

        const redis = new Redis(cluster.redis.url, { lazyConnect: true });
        let counted: (string | null)[];
        try {
          await redis.connect();
          counted = await redis.mget(runs.map((r) => `burst:chat:default:account:${r.accountId}`));
        } finally {
          redis.disconnect();
        }

        const sent = runs.reduce((n, r) => n + r.outcomes.length, 0);
        // Not Math.max(...): tens of thousands of arguments can overflow the stack (seen on Node 24).
        const slowest = runs.reduce((max, r) => r.outcomes.reduce((m, o) => (o.ms > m ? o.ms : m), max), 0);
        timings.push(`${sent} chat requests from ${CLIENTS} clients over ${runs.length} accounts in ${loadMs} ms (${Math.round((sent * 1000) / loadMs)}/s), slowest ${slowest} ms, ${resent} sent again after a closed idle connection`);

        const wrongAnswers = runs.flatMap((r) =>
          r.outcomes
            .map((o, i) => ({ o, i }))
            .filter(({ o, i }) => o.status !== (i < LIMIT ? 200 : 429) || o.clientError)
            .map(({ o, i }) => `account ${r.accountId} request ${i + 1}: ${o.replica} ${o.status} ${o.code} ${o.clientError ?? ''}`),
        );
        expect(wrongAnswers).toEqual([]);
        expect(runs.map((r, i) => ({ account: r.accountId, counted: Number(counted[i]) }))).toEqual(
          runs.map((r) => ({ account: r.accountId, counted: r.outcomes.length })),
        );
        for (const g of cluster.gateways) {
          expect({ replica: g.name, exit: g.exit, letThrough: await storeFailures(g.url), errorLines: errorLines(g.options.logFile) }).toEqual({
            replica: g.name,
            exit: null,
            letThrough: 0,
            errorLines: [],
          });
        }
      },
    ),
  );
});
