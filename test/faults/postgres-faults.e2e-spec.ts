import { FaultCluster, useFaultCluster, withReplicaLogs } from '../support/fault-cluster';
import { FAULT_MODEL } from '../support/fault-models';
import { chargedAmong, holdBoundMicros, moneyInvariantViolations, otherChargesOutside, servedCostMicros, waitUntilChargedExactlyOnce } from '../support/fault-money';
import { firstNormalChatAt, Outcome, sleep, startLoad, summarize, timedChat, timedGet } from '../support/fault-requests';

/**
 * Database faults for real, against three gateway processes on a PostgreSQL of the suite's own:
 * its connections terminated, a clean stop and a kill -9 of the postmaster each followed by a restart
 * on the same data. DESIGN.md section 9: no replica dies, requests that need the database end within
 * 2 s with 503 service_unavailable + Retry-After, /readyz 503, cached keys still list models, every
 * replica serves again within 5 s of the database, every 200 delivered is charged exactly once.
 */
jest.setTimeout(120_000);

const DB_DOWN_BOUND_MS = 2000;
const RECOVERY_BOUND_MS = 5000;
const OUTAGE_MS = 3000;

describe('Faults: PostgreSQL (3 gateway processes)', () => {
  let cluster: FaultCluster;
  const timings = useFaultCluster({ replicas: 3 }, 'PostgreSQL fault timings', (started) => (cluster = started));

  /**
   * A funded account whose key every replica has cached (GET /v1/models) and used for chat; with
   * `keyLimitUsd`, a key of its own monthly limit (it holds in a budget lease of its own: docs/billing.md, "Key limits").
   */
  async function warmAccount(keyLimitUsd?: number): Promise<{ accountId: string; key: string; warmed: Outcome[] }> {
    const account = await cluster.admin.createAccount({ creditsUsd: 50, monthlyLimitUsd: 40 });
    if (keyLimitUsd !== undefined) {
      const limited = await cluster.admin.request('POST', `/accounts/${account.accountId}/keys`, { name: 'limited', monthly_limit_usd: keyLimitUsd });
      expect(limited.status).toBe(201);
      account.key = limited.body.key;
    }
    const warmed: Outcome[] = [];
    for (const g of cluster.gateways) {
      expect((await timedGet(`${g.url}/v1/models`, account.key)).status).toBe(200);
      const warm = await timedChat(g, account.key);
      expect(warm.status).toBe(200);
      warmed.push(warm);
    }
    return { ...account, warmed };
  }

  async function expectEveryReplicaUp(): Promise<void> {
    for (const g of cluster.gateways) {
      expect({ replica: g.name, exit: g.exit }).toEqual({ replica: g.name, exit: null });
      expect({ replica: g.name, healthz: (await timedGet(`${g.url}/healthz`)).status }).toEqual({ replica: g.name, healthz: 200 });
    }
  }

  /** Every status is 200 or a well-formed 503 service_unavailable; nothing hung or broke the connection. */
  function expectOnly200Or503(outcomes: Outcome[]): void {
    const bad = outcomes.filter(
      (o) =>
        o.clientError !== null ||
        !(
          (o.status === 200 && o.code === null) ||
          (o.status === 503 && o.code === 'service_unavailable' && o.errorType === 'api_error' && o.retryAfter !== null)
        ),
    );
    expect({ unexpected: bad.slice(0, 5), summary: summarize(outcomes) }).toEqual({ unexpected: [], summary: summarize(outcomes) });
  }

  /**
   * After the fault: every 200 charged exactly once, the cost of the fake's tokens at the catalog prices; no
   * refused request charged; the account's other charges (the recovery probes) within their hold;
   * invariants over every account.
   */
  async function expectMoneyExact(accountId: string, outcomes: Outcome[], faultAt = 0): Promise<void> {
    const served = outcomes.filter((o) => o.status === 200).map((o) => o.requestId!);
    const refused = outcomes.filter((o) => o.status !== 200 && o.requestId).map((o) => o.requestId!);
    expect(served.every(Boolean)).toBe(true);
    const byId = new Map(outcomes.map((o) => [o.requestId, o]));
    const when = (problem: string) => {
      const o = byId.get(problem.split(':')[0])!;
      return `${problem} [${o.replica}, ${o.stream ? 'streamed' : 'JSON'}, started ${o.startedAt - faultAt} ms after the fault, took ${o.ms} ms]`;
    };
    expect((await waitUntilChargedExactlyOnce(cluster, served, servedCostMicros(cluster))).map(when)).toEqual([]);
    expect(await chargedAmong(cluster, refused)).toEqual([]);
    // The recovery probes (servesChatNormally: 'Hi', no max_tokens) are not followed one by one.
    const probeHold = holdBoundMicros(FAULT_MODEL, [{ role: 'user', content: 'Hi' }]);
    expect(await otherChargesOutside(cluster, accountId, served, probeHold)).toEqual([]);
    expect(await moneyInvariantViolations(cluster)).toEqual([]);
  }

  it(
    'pg_terminate_backend of every gateway connection, twice under load: no replica dies, each serves again within 5 s, money exact',
    withReplicaLogs(
      () => cluster,
      async () => {
        const { accountId, key, warmed } = await warmAccount();
        const load = startLoad(cluster.gateways, key);
        await sleep(500);
        let terminated = 0;
        for (let round = 0; round < 2; round++) {
          const rows = await cluster.query<{ ok: boolean }>(
            `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
              WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
          );
          terminated += rows.filter((r) => r.ok).length;
          await sleep(300);
        }
        const terminatedAt = Date.now();
        const recovered = await Promise.all(cluster.gateways.map((g) => firstNormalChatAt(g, key, RECOVERY_BOUND_MS)));
        const outcomes = await load.stop();
        timings.push(
          `terminate: ${terminated} connections ended; serving normally again after ${recovered.map((t) => Math.max(0, t - terminatedAt)).join(', ')} ms; ` +
            `${outcomes.length} requests\n${summarize(outcomes)}`,
        );

        expect(terminated).toBeGreaterThan(0);
        await expectEveryReplicaUp();
        expectOnly200Or503(outcomes);
        await expectMoneyExact(accountId, [...warmed, ...outcomes]);
      },
    ),
  );

  for (const fault of ['clean stop', 'kill -9'] as const) {
    it(
      `${fault} of PostgreSQL under load${fault === 'kill -9' ? ' (a key with its own limit)' : ''}, then restart on the same data: 503 within 2 s meanwhile, every replica back within 5 s, each 200 charged once`,
      withReplicaLogs(
        () => cluster,
        async () => {
          // The kill -9 round runs on a key with a monthly limit of its own: its lease, settled across the fault, too.
          const { accountId, key, warmed } = await warmAccount(fault === 'kill -9' ? 30 : undefined);
          const load = startLoad(cluster.gateways, key);
          await sleep(800);

          const faultAt = Date.now();
          if (fault === 'clean stop') await cluster.pg.stop();
          else await cluster.pg.kill9();
          const downAt = Date.now();

          // While it is down: readiness says so, liveness and what needs no database still answer.
          await sleep(500);
          const during = [];
          for (const g of cluster.gateways) {
            const [readyz, healthz, models] = await Promise.all([
              timedGet(`${g.url}/readyz`),
              timedGet(`${g.url}/healthz`),
              timedGet(`${g.url}/v1/models`, key),
            ]);
            during.push({ replica: g.name, readyz: [readyz.status, readyz.code], healthz: healthz.status, models: models.status });
            expect(readyz.ms).toBeLessThanOrEqual(DB_DOWN_BOUND_MS);
          }
          expect(during).toEqual(
            cluster.gateways.map((g) => ({ replica: g.name, readyz: [503, 'service_unavailable'], healthz: 200, models: 200 })),
          );
          await sleep(Math.max(0, OUTAGE_MS - (Date.now() - downAt)));

          const restartAt = Date.now();
          await cluster.pg.start();
          const upAt = Date.now();
          const recovered = await Promise.all(cluster.gateways.map((g) => firstNormalChatAt(g, key, RECOVERY_BOUND_MS + 2000)));
          const readyAgain = await Promise.all(cluster.gateways.map((g) => timedGet(`${g.url}/readyz`)));
          await sleep(500);
          const outcomes = await load.stop();

          const inOutage = outcomes.filter((o) => o.startedAt >= downAt && o.endedAt <= restartAt);
          const refusedInOutage = inOutage.filter((o) => o.status === 503);
          const recoveryMs = recovered.map((t) => t - upAt);
          timings.push(
            `${fault}: fault took ${downAt - faultAt} ms, restart ${upAt - restartAt} ms; during the outage ${inOutage.length} requests ` +
              `(${refusedInOutage.length} × 503), slowest ${Math.max(0, ...inOutage.map((o) => o.ms))} ms; ` +
              `readyz/healthz/models checked; serving normally ${recoveryMs.join(', ')} ms after PostgreSQL accepted again\n${summarize(outcomes)}`,
          );

          await expectEveryReplicaUp();
          expectOnly200Or503(outcomes);
          // Requests that began once the database was gone ended within 2 s, and some did need it.
          const slow = outcomes.filter((o) => o.startedAt >= downAt && o.startedAt < restartAt && o.ms > DB_DOWN_BOUND_MS);
          expect(slow).toEqual([]);
          expect(refusedInOutage.length).toBeGreaterThan(0);
          expect(recoveryMs.filter((ms) => ms > RECOVERY_BOUND_MS)).toEqual([]);
          expect(readyAgain.map((r) => r.status)).toEqual(cluster.gateways.map(() => 200));
          await expectMoneyExact(accountId, [...warmed, ...outcomes], faultAt);
        },
      ),
    );
  }
});
