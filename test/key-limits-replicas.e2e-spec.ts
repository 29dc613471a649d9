import { costMicros } from './support/chat-support';
import { FaultCluster, useFaultCluster, withReplicaLogs } from './support/fault-cluster';
import { FAULT_MODEL } from './support/fault-models';
import { moneyInvariantViolations } from './support/fault-money';
import { Outcome, summarize, timedChat } from './support/fault-requests';

/**
 * Issue 24: a key's monthly limit has the account limit's guarantee across replicas. 300 concurrent requests,
 * half of them streamed, spread over three gateway processes (each with its budget leases): a key's month spend
 * never passes its limit, every request served is charged exactly its cost once, refused ones nothing, and the
 * money invariants (ledger = balance, key spend = its charges, …) hold.
 */
jest.setTimeout(180_000);

const REQUESTS = 300;
const MAX_TOKENS = 50;

describe('Key limits under concurrency (3 gateway processes)', () => {
  let cluster: FaultCluster;
  useFaultCluster({ replicas: 3 }, 'Key limit timings', (started) => (cluster = started));

  async function newKey(accountId: string, body: Record<string, unknown>): Promise<{ id: string; key: string }> {
    const res = await cluster.admin.request('POST', `/accounts/${accountId}/keys`, body);
    if (res.status !== 201) throw new Error(`key not created: ${JSON.stringify(res.body)}`);
    return res.body;
  }

  /** REQUESTS at once, round robin over the replicas and `keys`, every second one streamed. */
  function burst(keys: string[]): Promise<Outcome[]> {
    return Promise.all(
      Array.from({ length: REQUESTS }, (_, i) =>
        timedChat(cluster.gateways[i % cluster.gateways.length], keys[i % keys.length], { stream: i % 2 === 0, maxTokens: MAX_TOKENS, timeoutMs: 60_000, closeConnection: true }),
      ),
    );
  }

  /** Each served request charged once, exactly the cost of its usage record's tokens; refused ones not at all. */
  async function chargeProblems(outcomes: Outcome[]): Promise<string[]> {
    const ids = outcomes.map((o) => o.requestId).filter((id): id is string => id !== null);
    const deadline = Date.now() + 15_000;
    let rows: { request_id: string; status: number; prompt_tokens: number; completion_tokens: number; cost: string; charges: number; charged: string | null }[] = [];
    while (Date.now() < deadline) {
      rows = await cluster.query(
        `SELECT u.request_id, u.status, u.prompt_tokens, u.completion_tokens, u.cost_micros::text AS cost,
                (SELECT count(*)::int FROM ledger_entries l WHERE l.request_id = u.request_id AND l.kind = 'charge') AS charges,
                (SELECT (-sum(l.amount_micros))::text FROM ledger_entries l WHERE l.request_id = u.request_id AND l.kind = 'charge') AS charged
           FROM usage_records u WHERE u.request_id = ANY($1)`,
        [ids],
      );
      if (rows.length === ids.length) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const problems: string[] = [];
    if (rows.length !== ids.length) problems.push(`${ids.length - rows.length} requests without a usage record`);
    for (const r of rows) {
      if (r.status !== 200) {
        if (r.charges !== 0) problems.push(`${r.request_id}: refused (${r.status}) but charged`);
        continue;
      }
      const cost = costMicros(FAULT_MODEL, r.prompt_tokens, r.completion_tokens);
      if (r.charges !== 1 || BigInt(r.charged ?? 0) !== cost || BigInt(r.cost) !== cost) {
        problems.push(`${r.request_id}: ${r.charges} charge(s) of ${r.charged}, recorded ${r.cost}, cost ${cost}`);
      }
    }
    return problems;
  }

  async function keySpend(keyId: string): Promise<bigint> {
    const [row] = await cluster.query<{ spend: string }>(
      `SELECT COALESCE(sum(c.spend_micros), 0)::text AS spend FROM key_monthly_counters c JOIN api_keys k ON k.budget_id = c.budget_id WHERE k.id = $1`,
      [keyId],
    );
    return BigInt(row.spend);
  }

  async function accountSpend(accountId: string): Promise<bigint> {
    const [row] = await cluster.query<{ spend: string }>(`SELECT COALESCE(sum(spend_micros), 0)::text AS spend FROM monthly_counters WHERE account_id = $1`, [accountId]);
    return BigInt(row.spend);
  }

  it(
    'one key with a small monthly limit, an account with plenty of credits: the key never spends past its limit, each charge exact',
    withReplicaLogs(
      () => cluster,
      async () => {
        const { accountId } = await cluster.admin.createAccount({ creditsUsd: '100' });
        const limitMicros = 3000n;
        const limited = await newKey(accountId, { name: 'limited', monthly_limit_usd: '0.003' });
        const outcomes = await burst([limited.key]);

        const unexpected = outcomes.filter((o) => o.status !== 200 && !(o.status === 402 && o.code === 'key_limit_reached'));
        expect({ unexpected: unexpected.map((o) => `${o.status} ${o.code} ${o.clientError}`), summary: summarize(outcomes) }).toMatchObject({ unexpected: [] });
        const served = outcomes.filter((o) => o.status === 200);
        expect(served.length).toBeGreaterThan(0);
        expect(outcomes.some((o) => o.status === 402)).toBe(true);
        expect(served.filter((o) => o.stream).every((o) => o.completedStream)).toBe(true);

        expect(await chargeProblems(outcomes)).toEqual([]);
        const spend = await keySpend(limited.id);
        expect(spend).toBeLessThanOrEqual(limitMicros);
        expect(spend).toBe(await accountSpend(accountId));
        expect(await moneyInvariantViolations(cluster)).toEqual([]);
      },
    ),
  );

  it(
    "keys of one account racing for the account's limit (two with key limits of their own, one without): no limit is passed, each charge exact",
    withReplicaLogs(
      () => cluster,
      async () => {
        const accountLimit = 4000n;
        const keyLimit = 2500n;
        const { accountId } = await cluster.admin.createAccount({ creditsUsd: '100', monthlyLimitUsd: '0.004' });
        const one = await newKey(accountId, { name: 'one', monthly_limit_usd: '0.0025' });
        const two = await newKey(accountId, { name: 'two' });
        const three = await newKey(accountId, { name: 'three', monthly_limit_usd: '0.0025' });
        const outcomes = await burst([one.key, two.key, three.key]);

        const allowed = new Set(['monthly_limit_reached', 'key_limit_reached']);
        const unexpected = outcomes.filter((o) => o.status !== 200 && !(o.status === 402 && allowed.has(o.code ?? '')));
        expect({ unexpected: unexpected.map((o) => `${o.status} ${o.code} ${o.clientError}`), summary: summarize(outcomes) }).toMatchObject({ unexpected: [] });
        expect(outcomes.some((o) => o.code === 'monthly_limit_reached')).toBe(true);
        expect(await chargeProblems(outcomes)).toEqual([]);

        const [spendOne, spendTwo, spendThree] = await Promise.all([keySpend(one.id), keySpend(two.id), keySpend(three.id)]);
        expect(spendOne).toBeLessThanOrEqual(keyLimit);
        expect(spendThree).toBeLessThanOrEqual(keyLimit);
        const total = await accountSpend(accountId);
        expect(total).toBeLessThanOrEqual(accountLimit);
        expect(spendOne + spendTwo + spendThree).toBe(total);
        expect(await moneyInvariantViolations(cluster)).toEqual([]);
      },
    ),
  );
});
