import { FaultCluster } from './fault-cluster';
import { sleep } from './fault-requests';

/**
 * The money invariants of docs/billing.md over EVERY account, read in one snapshot. Returns one line
 * per violation (empty: all hold). Months are UTC, as billing counts them.
 */
export async function moneyInvariantViolations(cluster: FaultCluster): Promise<string[]> {
  return cluster.snapshot(async (q) => {
    const problems: string[] = [];
    const ledger = await q<{ id: string; balance: string; ledger: string }>(`
      SELECT a.id, a.balance_micros AS balance, COALESCE(sum(l.amount_micros), 0) AS ledger
        FROM accounts a LEFT JOIN ledger_entries l ON l.account_id = a.id
       GROUP BY a.id HAVING a.balance_micros <> COALESCE(sum(l.amount_micros), 0)`);
    for (const r of ledger) problems.push(`account ${r.id}: balance ${r.balance} ≠ sum of ledger ${r.ledger}`);

    const reserved = await q<{ id: string; reserved: string; holds: string }>(`
      SELECT a.id, a.reserved_micros AS reserved, COALESCE(sum(h.amount_micros), 0) AS holds
        FROM accounts a LEFT JOIN holds h ON h.account_id = a.id
       GROUP BY a.id HAVING a.reserved_micros <> COALESCE(sum(h.amount_micros), 0)`);
    for (const r of reserved) problems.push(`account ${r.id}: reserved ${r.reserved} ≠ sum of open holds ${r.holds}`);

    const spend = await q<{ account_id: string; month: string; spend: string; charges: string }>(`
      SELECT c.account_id, c.month::text, c.spend_micros AS spend, COALESCE(ch.total, 0) AS charges
        FROM monthly_counters c
        LEFT JOIN (SELECT account_id, date_trunc('month', created_at AT TIME ZONE 'UTC')::date AS month, -sum(amount_micros) AS total
                     FROM ledger_entries WHERE kind = 'charge' GROUP BY 1, 2) ch
          ON ch.account_id = c.account_id AND ch.month = c.month
       WHERE c.spend_micros <> COALESCE(ch.total, 0)`);
    for (const r of spend) problems.push(`account ${r.account_id} month ${r.month}: spend ${r.spend} ≠ sum of charges ${r.charges}`);

    const chargesWithoutCounter = await q<{ account_id: string; month: string }>(`
      SELECT l.account_id, date_trunc('month', l.created_at AT TIME ZONE 'UTC')::date::text AS month
        FROM ledger_entries l
       WHERE l.kind = 'charge' AND NOT EXISTS (
             SELECT 1 FROM monthly_counters c
              WHERE c.account_id = l.account_id AND c.month = date_trunc('month', l.created_at AT TIME ZONE 'UTC')::date)
       GROUP BY 1, 2`);
    for (const r of chargesWithoutCounter) problems.push(`account ${r.account_id} month ${r.month}: charges but no monthly counter`);

    const held = await q<{ account_id: string; month: string; held: string; holds: string }>(`
      SELECT c.account_id, c.month::text, c.held_micros AS held, COALESCE(h.total, 0) AS holds
        FROM monthly_counters c
        LEFT JOIN (SELECT account_id, month, sum(amount_micros) AS total FROM holds GROUP BY 1, 2) h
          ON h.account_id = c.account_id AND h.month = c.month
       WHERE c.held_micros <> COALESCE(h.total, 0)`);
    for (const r of held) problems.push(`account ${r.account_id} month ${r.month}: held ${r.held} ≠ sum of that month's holds ${r.holds}`);

    const over = await q<{ id: string; balance: string; reserved: string; month: string | null; spend: string | null; lim: string | null }>(`
      SELECT a.id, a.balance_micros AS balance, a.reserved_micros AS reserved, c.month::text, c.spend_micros AS spend,
             a.monthly_limit_micros AS lim
        FROM accounts a LEFT JOIN monthly_counters c ON c.account_id = a.id
       WHERE a.balance_micros < 0 OR a.reserved_micros > a.balance_micros
          OR (a.monthly_limit_micros IS NOT NULL AND c.spend_micros > a.monthly_limit_micros)`);
    for (const r of over) {
      problems.push(`account ${r.id}: over a limit (balance ${r.balance}, reserved ${r.reserved}, month ${r.month} spend ${r.spend}, limit ${r.lim})`);
    }

    // Key budgets (key controls): spend = the charges of their keys' requests, held = their own leases, spend ≤ the key limit.
    const keySpend = await q<{ budget_id: string; month: string; spend: string; charges: string }>(`
      SELECT c.budget_id, c.month::text, c.spend_micros AS spend, COALESCE(ch.total, 0) AS charges
        FROM key_monthly_counters c
        LEFT JOIN (SELECT k.budget_id, date_trunc('month', l.created_at AT TIME ZONE 'UTC')::date AS month, -sum(l.amount_micros) AS total
                     FROM ledger_entries l JOIN usage_records u ON u.request_id = l.request_id JOIN api_keys k ON k.id = u.key_id
                    WHERE l.kind = 'charge' GROUP BY 1, 2) ch
          ON ch.budget_id = c.budget_id AND ch.month = c.month
       WHERE c.spend_micros <> COALESCE(ch.total, 0)`);
    for (const r of keySpend) problems.push(`key budget ${r.budget_id} month ${r.month}: spend ${r.spend} ≠ sum of its keys' charges ${r.charges}`);
    const keyHeld = await q<{ budget_id: string; month: string; held: string; holds: string }>(`
      SELECT c.budget_id, c.month::text, c.held_micros AS held, COALESCE(h.total, 0) AS holds
        FROM key_monthly_counters c
        LEFT JOIN (SELECT budget_id, month, sum(amount_micros) AS total FROM holds WHERE budget_id IS NOT NULL GROUP BY 1, 2) h
          ON h.budget_id = c.budget_id AND h.month = c.month
       WHERE c.held_micros <> COALESCE(h.total, 0)`);
    for (const r of keyHeld) problems.push(`key budget ${r.budget_id} month ${r.month}: held ${r.held} ≠ sum of its leases ${r.holds}`);
    const keyOver = await q<{ budget_id: string; month: string; spend: string; lim: string }>(`
      SELECT c.budget_id, c.month::text, c.spend_micros AS spend, k.lim
        FROM key_monthly_counters c JOIN (SELECT budget_id, max(monthly_limit_micros) AS lim FROM api_keys GROUP BY 1) k ON k.budget_id = c.budget_id
       WHERE k.lim IS NOT NULL AND c.spend_micros > k.lim`);
    for (const r of keyOver) problems.push(`key budget ${r.budget_id} month ${r.month}: spend ${r.spend} over its limit ${r.lim}`);
    return problems;
  });
}

export interface ChargeRecord {
  requestId: string;
  usageRows: number;
  costMicros: bigint;
  charges: number;
  chargedMicros: bigint;
}

/** For each request id: its usage records and ledger charges (count and amounts). */
export async function chargeRecords(cluster: FaultCluster, requestIds: string[]): Promise<Map<string, ChargeRecord>> {
  const records = new Map<string, ChargeRecord>(
    requestIds.map((id) => [id, { requestId: id, usageRows: 0, costMicros: 0n, charges: 0, chargedMicros: 0n }]),
  );
  const usage = await cluster.query<{ request_id: string; n: number; cost: string }>(
    `SELECT request_id, count(*)::int AS n, sum(cost_micros)::text AS cost FROM usage_records WHERE request_id = ANY($1) GROUP BY 1`,
    [requestIds],
  );
  for (const r of usage) Object.assign(records.get(r.request_id)!, { usageRows: r.n, costMicros: BigInt(r.cost) });
  const charges = await cluster.query<{ request_id: string; n: number; amount: string }>(
    `SELECT request_id, count(*)::int AS n, (-sum(amount_micros))::text AS amount
       FROM ledger_entries WHERE kind = 'charge' AND request_id = ANY($1) GROUP BY 1`,
    [requestIds],
  );
  for (const r of charges) Object.assign(records.get(r.request_id)!, { charges: r.n, chargedMicros: BigInt(r.amount) });
  return records;
}

/** What is wrong with "charged exactly once": one usage record, one charge, charge = its cost > 0. */
export function notChargedExactlyOnce(record: ChargeRecord): string | null {
  if (record.usageRows === 1 && record.charges === 1 && record.costMicros > 0n && record.chargedMicros === record.costMicros) return null;
  return `${record.requestId}: ${record.usageRows} usage record(s) costing ${record.costMicros}, ${record.charges} charge(s) of ${record.chargedMicros}`;
}

/**
 * Waits (up to `timeoutMs`: writes delayed by an outage are retried in the background) until every
 * request id is charged exactly once; returns the problems left then (empty: all charged once).
 */
export async function waitUntilChargedExactlyOnce(cluster: FaultCluster, requestIds: string[], timeoutMs = 15_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const problems = [...(await chargeRecords(cluster, requestIds)).values()].map(notChargedExactlyOnce).filter((p): p is string => p !== null);
    if (problems.length === 0 || Date.now() > deadline) {
      // A late duplicate would show up now: look once more after a moment.
      await sleep(300);
      return [...(await chargeRecords(cluster, requestIds)).values()].map(notChargedExactlyOnce).filter((p): p is string => p !== null);
    }
    await sleep(200);
  }
}

/** Request ids that have a ledger charge (requests that were refused must have none). */
export async function chargedAmong(cluster: FaultCluster, requestIds: string[]): Promise<string[]> {
  const rows = await cluster.query<{ request_id: string }>(
    `SELECT DISTINCT request_id FROM ledger_entries WHERE kind = 'charge' AND request_id = ANY($1)`,
    [requestIds],
  );
  return rows.map((r) => r.request_id);
}
