import { ClassTokens, costMicrosByClass, holdMicrosOf } from './cost-oracle';
import type { FakeReply } from './fake-upstream';
import { FaultCluster } from './fault-cluster';
import { FAULT_MODEL, FaultModel } from './fault-models';
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

/**
 * The tokens of a chat the fake upstream answered in full with `reply` (its usage block, or usage chunk):
 * the reply's totals, the completion cut to the client's max_tokens as the fake cuts it, and the classes of
 * its usage details. The fault suite sends only well-formed details; odd ones (strings, negatives, parts
 * over their total, which the gateway cuts to fit) are refused here rather than guessed at.
 */
export function tokensOfReply(reply: FakeReply, maxTokens?: number): ClassTokens {
  const completion = maxTokens !== undefined && maxTokens < reply.completionTokens ? maxTokens : reply.completionTokens;
  const detail = (details: Record<string, unknown> | undefined, field: string, total: number): number => {
    const value = details?.[field] ?? 0;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > total) {
      throw new Error(`the fault suite's cost formula takes whole, fitting usage details only (${field}: ${JSON.stringify(value)})`);
    }
    return value;
  };
  const tokens: ClassTokens = {
    prompt: reply.promptTokens,
    completion,
    cached: detail(reply.usageDetails?.prompt, 'cached_tokens', reply.promptTokens),
    cacheWrite: detail(reply.usageDetails?.prompt, 'cache_write_tokens', reply.promptTokens),
    cacheWrite1h: detail(reply.usageDetails?.prompt, 'cache_write_1h_tokens', reply.promptTokens),
    audioIn: detail(reply.usageDetails?.prompt, 'audio_tokens', reply.promptTokens),
    audioOut: detail(reply.usageDetails?.completion, 'audio_tokens', completion),
  };
  if (tokens.cached! + tokens.cacheWrite! + tokens.audioIn! > tokens.prompt) throw new Error('the usage details add up to more than prompt_tokens');
  if (tokens.cacheWrite1h! > tokens.cacheWrite!) throw new Error('the 1-hour cache writes are more than cache_write_tokens');
  return tokens;
}

/** What a chat of `model` answered in full by the cluster's fake upstream costs (its reply as it stands now). */
export function servedCostMicros(cluster: FaultCluster, model: FaultModel = FAULT_MODEL, maxTokens?: number): bigint {
  const upstream = model.id === FAULT_MODEL.id ? cluster.upstream : cluster.badUpstream!;
  return costMicrosByClass(model, tokensOfReply(upstream.reply, maxTokens));
}

/** The hold of a chat (cost-oracle.ts): a charge is at most its hold, the bound for a charge the test cannot know exactly. */
export function holdBoundMicros(model: FaultModel, messages: unknown[], allowance: number = model.maxOutput): bigint {
  return holdMicrosOf(model, messages, allowance);
}

export interface ChargeRecord {
  requestId: string;
  usageRows: number;
  promptTokens: number;
  completionTokens: number;
  costMicros: bigint;
  charges: number;
  chargedMicros: bigint;
}

/** For each request id: its usage records (count, tokens, recorded cost) and ledger charges (count and amount). */
export async function chargeRecords(cluster: FaultCluster, requestIds: string[]): Promise<Map<string, ChargeRecord>> {
  const records = new Map<string, ChargeRecord>(
    requestIds.map((id) => [id, { requestId: id, usageRows: 0, promptTokens: 0, completionTokens: 0, costMicros: 0n, charges: 0, chargedMicros: 0n }]),
  );
  const usage = await cluster.query<{ request_id: string; n: number; prompt: number; completion: number; cost: string }>(
    `SELECT request_id, count(*)::int AS n, sum(prompt_tokens)::int AS prompt, sum(completion_tokens)::int AS completion, sum(cost_micros)::text AS cost
       FROM usage_records WHERE request_id = ANY($1) GROUP BY 1`,
    [requestIds],
  );
  for (const r of usage) {
    Object.assign(records.get(r.request_id)!, { usageRows: r.n, promptTokens: r.prompt, completionTokens: r.completion, costMicros: BigInt(r.cost) });
  }
  const charges = await cluster.query<{ request_id: string; n: number; amount: string }>(
    `SELECT request_id, count(*)::int AS n, (-sum(amount_micros))::text AS amount
       FROM ledger_entries WHERE kind = 'charge' AND request_id = ANY($1) GROUP BY 1`,
    [requestIds],
  );
  for (const r of charges) Object.assign(records.get(r.request_id)!, { charges: r.n, chargedMicros: BigInt(r.amount) });
  return records;
}

/**
 * What is wrong with "charged exactly once, the formula's amount": one usage record, one charge, and both
 * the charge and the recorded cost equal to `expectedMicros` (the test's own formula, not the gateway's figure).
 */
export function notChargedExactlyOnce(record: ChargeRecord, expectedMicros: bigint): string | null {
  if (expectedMicros <= 0n) throw new Error(`${record.requestId}: a served request must cost something (formula: ${expectedMicros})`);
  if (record.usageRows === 1 && record.charges === 1 && record.chargedMicros === expectedMicros && record.costMicros === expectedMicros) return null;
  return (
    `${record.requestId}: ${record.usageRows} usage record(s) of ${record.promptTokens}+${record.completionTokens} tokens costing ${record.costMicros}, ` +
    `${record.charges} charge(s) of ${record.chargedMicros}; the formula's cost is ${expectedMicros}`
  );
}

/**
 * Waits (up to `timeoutMs`: writes delayed by an outage are retried in the background) until every
 * request id is charged exactly once, `expectedMicros` each; returns the problems left then (empty: all
 * charged once, at that amount).
 */
export async function waitUntilChargedExactlyOnce(cluster: FaultCluster, requestIds: string[], expectedMicros: bigint, timeoutMs = 15_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  const problems = async () =>
    [...(await chargeRecords(cluster, requestIds)).values()].map((r) => notChargedExactlyOnce(r, expectedMicros)).filter((p): p is string => p !== null);
  for (;;) {
    if ((await problems()).length === 0 || Date.now() > deadline) {
      // A late duplicate would show up now: look once more after a moment.
      await sleep(300);
      return problems();
    }
    await sleep(200);
  }
}

/**
 * The charges of an account's requests that the test did not follow one by one (an SDK probe its client may
 * have given up on), outside 1..`maxMicros`: such a request may have been cut short, and a stream the client
 * left is charged the gateway's own token count of what it relayed (docs/billing.md, "Usage records of chat
 * requests"), which the test cannot know; the hold is the bound the documentation gives for it.
 */
export async function otherChargesOutside(cluster: FaultCluster, accountId: string, followed: string[], maxMicros: bigint): Promise<string[]> {
  const rows = await cluster.query<{ request_id: string; amount: string }>(
    `SELECT request_id, (-amount_micros)::text AS amount FROM ledger_entries
      WHERE account_id = $1 AND kind = 'charge' AND NOT (request_id = ANY($2))`,
    [accountId, followed],
  );
  return rows.filter((r) => BigInt(r.amount) <= 0n || BigInt(r.amount) > maxMicros).map((r) => `${r.request_id}: charged ${r.amount}, not in 1..${maxMicros}`);
}

/** Request ids that have a ledger charge (requests that were refused must have none). */
export async function chargedAmong(cluster: FaultCluster, requestIds: string[]): Promise<string[]> {
  const rows = await cluster.query<{ request_id: string }>(
    `SELECT DISTINCT request_id FROM ledger_entries WHERE kind = 'charge' AND request_id = ANY($1)`,
    [requestIds],
  );
  return rows.map((r) => r.request_id);
}
