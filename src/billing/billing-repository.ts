import { Inject, Injectable, Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';
import { isDatabaseUnavailable } from '../common/database/database-unavailable';
import { usageRecordInsert, UsageRecordValues } from '../usage/usage-record';
import { BILLING_POOL } from './billing-pool';
import { BudgetLease, GrowAnswer, GrowClaim, PLENTY_HOLDS } from './budget-lease';
import { DeclinedGrow } from './declined';
import { Reservation } from './reservation';
import { StatementBatcher } from './statement-batcher';

/** A row of billing_lease_grow_batch. */
export interface GrowRow extends DeclinedGrow {
  item: number;
  outcome: 'ok' | 'insufficient_credits' | 'monthly_limit_reached' | 'key_limit_reached' | 'lease_gone' | 'lease_stale';
  hold_micros: string;
  allowance: string;
  capped: boolean;
  lease_delta: string;
  plenty: boolean;
}

/** A row of billing_lease_settle_batch. */
export interface SettleRow {
  item: number;
  charged: string;
  /** How much the lease row shrank; null when the lease was gone. */
  released: string | null;
}

/** What a request asks a grow for. */
export interface HoldAsk {
  promptTokens: number;
  requestedMaxTokens: number | null;
  maxOutputTokens: number;
  /** Per prompt token: the highest input-class price (TokenPrices.holdInput). */
  inputPicos: bigint;
  /** Per output token of all the choices asked for: the highest output-class price (TokenPrices.holdOutput) × n. */
  outputPicos: bigint;
  /** What the hold adds whatever the output: the fees of the server tools offered (tool-fees.ts). */
  fixedPicos: bigint;
}

/** One lease grow, as billing_lease_grow_batch reads it. */
interface GrowItem {
  account: string;
  lease: string;
  budget: string | null;
  known: boolean;
  claimed: string;
  prompt: number;
  requested: number | null;
  max_output: number;
  in_picos: string;
  out_picos: string;
  ttl_ms: number;
  spare: number;
  plenty: number;
}

/** One settlement, as billing_lease_settle_batch reads it, with the request's usage record unless written already. */
export interface SettleItem {
  account: string;
  lease: string;
  request: string;
  budget: string | null;
  key_lease: boolean;
  hold: string;
  release_rest: boolean;
  /** The request's cost (src/billing/request-cost.ts), micro-USD; the charge is at most the hold. */
  cost: string;
  usage?: UsageRecordValues;
}

const GROW_BATCH = `SELECT * FROM billing_lease_grow_batch($1::jsonb)`;
// One statement, so one round trip and one transaction: the charges and the requests' usage records.
const SETTLE_BATCH = `WITH settled AS (SELECT item, charged, released FROM billing_lease_settle_batch($1::jsonb)),
  recorded AS (${usageRecordInsert(
    's.usage',
    's.charged',
    `(SELECT settled.charged, $1::jsonb -> settled.item -> 'usage' AS usage FROM settled WHERE $1::jsonb -> settled.item ? 'usage') AS s`,
  )})
  SELECT item, charged, released FROM settled`;
// The rows are locked in id order, as the batch functions lock them, so a renewal never deadlocks with them.
const RENEW_LEASES = `UPDATE holds h SET expires_at = now() + $2 * interval '1 millisecond'
  FROM (SELECT id FROM holds WHERE request_id = ANY($1::text[]) ORDER BY id FOR UPDATE) AS locked
  WHERE h.id = locked.id RETURNING h.request_id`;
/** Batches running at once per statement; more requests wait and share the next one. */
const BATCHES_IN_FLIGHT = 1;
const MAX_BATCH = 500;

/**
 * Billing's SQL on its own pool (BILLING_POOL): lease grows and settlements through group commit
 * (StatementBatcher over the batch functions of src/database/functions), the lease heartbeat, the
 * sweep and the return of a lease. docs/billing.md, "Cost on the hot path".
 */
@Injectable()
export class BillingRepository {
  private readonly logger = new Logger(BillingRepository.name);
  private readonly grows = this.batcher<GrowItem, GrowRow>('billing_lease_grow_batch', GROW_BATCH);
  private readonly settlements: StatementBatcher<SettleItem, SettleRow>;
  /** A lease row not renewed for this long is swept: its replica is dead (billing.lease_ttl_s). */
  private readonly leaseTtlMs: number;

  constructor(
    @Inject(BILLING_POOL) private readonly db: Pool,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
  ) {
    this.leaseTtlMs = config.billing.lease_ttl_s * 1000;
    this.settlements = this.batcher('billing_lease_settle_batch', SETTLE_BATCH, config.billing.settlement_linger_ms);
  }

  /** Grows `lease` for one request, on the part it claimed plus what the account has left. */
  grow(lease: BudgetLease, claim: GrowClaim, ask: HoldAsk): Promise<GrowRow> {
    return this.grows.submit({
      account: lease.accountId,
      lease: lease.id,
      budget: lease.budgetId,
      known: lease.known,
      claimed: claim.claimed.toString(),
      // The prompt's part of the hold is fixed, as the tools' fees are: with fees, both go as one "token" at
      // their sum, which the SQL arithmetic (prompt × in_picos) prices the same, and no SQL function changes.
      prompt: ask.fixedPicos === 0n ? ask.promptTokens : 1,
      requested: ask.requestedMaxTokens,
      max_output: ask.maxOutputTokens,
      in_picos: (ask.fixedPicos === 0n ? ask.inputPicos : BigInt(ask.promptTokens) * ask.inputPicos + ask.fixedPicos).toString(),
      out_picos: ask.outputPicos.toString(),
      ttl_ms: this.leaseTtlMs,
      spare: claim.spareHolds,
      plenty: PLENTY_HOLDS,
    });
  }

  /** `linger`: nobody waits for the answer, so the call may wait billing.settlement_linger_ms for company. */
  settle(item: SettleItem, linger: boolean): Promise<SettleRow> {
    return this.settlements.submit(item, linger);
  }

  /**
   * A settlement attempted again after an attempt of unknown outcome. The first may have committed
   * (its answer lost with the connection): its usage record, or its ledger charge, written in the
   * same statement, says so, and then it is not sent again. The unique charge per request id in the
   * ledger is the last guard against charging twice.
   */
  async settleAgain(item: SettleItem): Promise<SettleRow> {
    const {
      rows: [found],
    } = await this.db.query<{ recorded: boolean; charged: string | null }>(
      `SELECT EXISTS (SELECT 1 FROM usage_records WHERE request_id = $1) AS recorded,
              (SELECT -amount_micros FROM ledger_entries WHERE request_id = $1 AND kind = 'charge') AS charged`,
      [item.request],
    );
    if ((item.usage && found.recorded) || found.charged !== null) {
      const charged = found.charged ?? '0';
      return { item: 0, charged, released: item.release_rest ? item.hold : charged };
    }
    return this.settlements.submit(item);
  }

  /** Sends the settlements lingering for company now. */
  flushSettlements(): void {
    this.settlements.flush();
  }

  /** Pushes back the expiry of these leases' rows by a lease lifetime; resolves to the ids of those still there. */
  async renewLeases(leaseIds: string[]): Promise<Set<string>> {
    const { rows } = await this.db.query<{ request_id: string }>({
      name: 'billing_renew_leases',
      text: RENEW_LEASES,
      values: [leaseIds, this.leaseTtlMs],
    });
    return new Set(rows.map((r) => r.request_id));
  }

  /**
   * Releases expired holds (left by a dead process), `batch` per call; returns how many. Sweeps nothing
   * until PostgreSQL has been up for a lease lifetime, so live replicas renew first.
   */
  async sweepExpiredHolds(batch: number): Promise<number> {
    let total = 0;
    for (;;) {
      const {
        rows: [row],
      } = await this.db.query<{ n: number }>(`SELECT billing_sweep_holds($1, $2) AS n`, [batch, this.leaseTtlMs]);
      total += row.n;
      if (row.n < batch) return total;
    }
  }

  /** Gives a lease's row back to its account (billing_release); never rejects. */
  giveBack(lease: BudgetLease): Promise<void> {
    return this.db.query(`SELECT billing_release($1, $2)`, [lease.accountId, lease.id]).then(
      () => undefined,
      // Its row expires and the sweeper releases it: while the database is down, that is expected.
      (err: Error) =>
        isDatabaseUnavailable(err)
          ? this.logger.warn(`Budget lease ${lease.id} not given back (database unavailable); it expires and is swept`)
          : this.logger.error({ err }, `Could not give back budget lease ${lease.id}: ${err.message}`),
    );
  }

  /** Group commit over a batch function: it takes the items as JSON and its rows carry their item's position. */
  private batcher<I, R extends { item: number }>(name: string, text: string, lingerMs = 0): StatementBatcher<I, R> {
    return new StatementBatcher<I, R>(
      async (items) => {
        // Named: prepared once per connection, so each call skips parsing and planning.
        const { rows } = await this.db.query<R>({ name, text, values: [JSON.stringify(items)] });
        const results = new Array<R>(items.length);
        for (const row of rows) results[row.item] = row;
        return results;
      },
      BATCHES_IN_FLIGHT,
      MAX_BATCH,
      lingerMs,
    );
  }
}

/** The lease's view of a grow the database decided. */
export function growAnswer(row: GrowRow): GrowAnswer {
  return { granted: row.outcome === 'ok', hold: BigInt(row.hold_micros), delta: BigInt(row.lease_delta), plenty: row.plenty };
}

/** A settlement of `reservation` for a cost of `costMicros`, with `record` (its usage record) when given. */
export function settleItem(reservation: Reservation, costMicros: bigint, record: UsageRecordValues | null, releaseRest: boolean): SettleItem {
  return {
    account: reservation.accountId,
    lease: reservation.lease.id,
    request: reservation.requestId,
    budget: reservation.budgetId,
    key_lease: reservation.lease.budgetId !== null,
    hold: reservation.holdMicros.toString(),
    release_rest: releaseRest,
    cost: costMicros.toString(),
    ...(record ? { usage: record } : {}),
  };
}
