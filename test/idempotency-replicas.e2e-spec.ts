import { FaultCluster, useFaultCluster, withReplicaLogs } from './support/fault-cluster';
import { FAULT_MODEL } from './support/fault-models';

/**
 * Idempotency-Key across replicas (issue 35): concurrent repeats on two gateway processes sharing one PostgreSQL run
 * the request once; a replica killed while it owns a key does not leave the key stuck: once its claim lapses
 * (claim_ttl_s), a repeat on the other replica runs anew, and the first, never answered, was never charged.
 */
jest.setTimeout(120_000);

const CLAIM_TTL_S = 3;

describe('Idempotency-Key across replicas', () => {
  let cluster: FaultCluster;
  useFaultCluster({ replicas: 2, idempotency: { claim_ttl_s: CLAIM_TTL_S }, billing: { lease_ttl_s: 3, hold_sweep_interval_s: 1 } }, 'Idempotency timings', (c) => (cluster = c));

  async function post(replica: number, key: string, idempotencyKey: string, content = 'hello') {
    const res = await fetch(`${cluster.gateways[replica].url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey, connection: 'close' },
      body: JSON.stringify({ model: FAULT_MODEL.id, messages: [{ role: 'user', content }], max_tokens: 20 }),
    });
    return { status: res.status, replayed: res.headers.get('idempotent-replayed'), text: await res.text() };
  }

  /**
   * The account's charges once its settlements are complete: no hold or lease left on the account (a lease goes back
   * only when no request of it is running and its settlements have committed; a dead replica's is swept) and a usage
   * record for each of the `answered` requests (written with its charge, in one transaction). Counting then sees a
   * second charge however late it comes.
   */
  async function settledCharges(accountId: string, answered: number): Promise<number> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [state] = await cluster.query<{ holds: number; records: number }>(
        `SELECT (SELECT count(*)::int FROM holds WHERE account_id = $1) AS holds, (SELECT count(*)::int FROM usage_records WHERE account_id = $1) AS records`,
        [accountId],
      );
      if (state.holds === 0 && state.records >= answered) break;
      if (Date.now() > deadline) throw new Error(`settlement not complete after 30 s: ${state.holds} holds, ${state.records} of ${answered} usage records`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const [{ n }] = await cluster.query<{ n: number }>(`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1 AND kind = 'charge'`, [accountId]);
    return n;
  }

  it(
    '20 concurrent repeats over two replicas make one upstream call and one charge',
    withReplicaLogs(
      () => cluster,
      async () => {
        const { accountId, key } = await cluster.admin.createAccount({ creditsUsd: '5' });
        cluster.upstream.resetState();
        cluster.upstream.responseDelayMs = 300;
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) => post(i % 2, key, 'concurrent-1')));
        const served = results.filter((r) => r.status === 200);
        expect(results.every((r) => r.status === 200 || r.status === 409)).toBe(true);
        expect(served.length).toBeGreaterThanOrEqual(1);
        // Every 200 is the same answer: the first, or its replay.
        expect(new Set(served.map((r) => r.text)).size).toBe(1);
        expect(served.filter((r) => r.replayed === null)).toHaveLength(1);
        // Repeats once it is done: replays from either replica.
        for (const replica of [0, 1]) {
          const again = await post(replica, key, 'concurrent-1');
          expect(again).toMatchObject({ status: 200, replayed: 'true', text: served[0].text });
        }
        expect(cluster.upstream.requests).toHaveLength(1);
        // 20 concurrent requests and 2 replays answered: one charge once all of them are settled.
        expect(await settledCharges(accountId, 22)).toBe(1);
      },
    ),
  );

  it(
    'a replica killed while it owns a key: the repeat on the other runs anew once the claim lapses; the first was never charged',
    withReplicaLogs(
      () => cluster,
      async () => {
        const { accountId, key } = await cluster.admin.createAccount({ creditsUsd: '5' });
        cluster.upstream.resetState();
        cluster.upstream.failNext('hang');
        const first = post(0, key, 'killed-owner').catch((err: Error) => ({ status: 0, replayed: null, text: err.message }));
        await cluster.upstream.waitFor(() => cluster.upstream.requests.length === 1, 10_000);
        await cluster.gateways[0].kill9();
        expect((await first).status).toBe(0);
        const blocked = await post(1, key, 'killed-owner');
        expect(blocked.status).toBe(409);
        const started = Date.now();
        let answer = blocked;
        let answered = 1;
        while (answer.status === 409 && Date.now() - started < 30_000) {
          await new Promise((r) => setTimeout(r, 500));
          answer = await post(1, key, 'killed-owner');
          answered++;
        }
        expect(answer.status).toBe(200);
        expect(answer.replayed).toBeNull();
        expect(Date.now() - started).toBeLessThan(CLAIM_TTL_S * 1000 + 15_000);
        expect(cluster.upstream.requests).toHaveLength(2);
        // The dead replica's hold comes back (its lease lapses); only the second request is charged.
        expect(await settledCharges(accountId, answered)).toBe(1);
        const [money] = await cluster.query<{ balance: string; reserved: string; ledger: string }>(
          `SELECT balance_micros::text AS balance, reserved_micros::text AS reserved, (SELECT sum(amount_micros)::text FROM ledger_entries WHERE account_id = $1) AS ledger FROM accounts WHERE id = $1`,
          [accountId],
        );
        expect(money).toEqual({ balance: money.ledger, reserved: '0', ledger: money.ledger });
      },
    ),
  );
});
