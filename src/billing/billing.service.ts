import { Inject, Injectable, Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { CatalogEntry, GatewayConfig } from '../config/gateway-config.schema';
import { ErrorCode, GatewayError } from '../common/errors';
import { GatewayRequest } from '../common/http/gateway-request';
import { microsToUsd } from '../common/money';
import { monthKey } from '../common/month';
import { isDatabaseUnavailable } from '../common/database/database-unavailable';
import { usageRecordInsert, UsageRecordValues, UsageService } from '../usage/usage.service';
import { BILLING_POOL } from './billing-pool';
import { BudgetLease } from './budget-lease';
import { PendingWriteLost, PendingWrites } from '../usage/pending-writes';
import { StatementBatcher } from './statement-batcher';
import { costMicros, TokenPrices, tokenPrices } from './token-prices';

export interface ReserveInput {
  accountId: string;
  requestId: string;
  model: CatalogEntry;
  /** An upper bound of the prompt's tokens. */
  promptTokens: number;
  /** The client's max_tokens / max_completion_tokens, or null when it set none. */
  requestedMaxTokens: number | null;
  /** Choices asked for (n): each may produce the whole output allowance. */
  choices?: number;
}

/** The hold of one in-flight chat request: pass it back to settle or release. */
export interface Reservation {
  requestId: string;
  holdMicros: bigint;
  /** Output tokens covered by the hold: the client's own limit, or the capped model maximum. */
  outputAllowance: number;
  /** True when the client set no limit and the allowance was cut to what is affordable (send it upstream). */
  capped: boolean;
  readonly accountId: string;
  readonly prices: TokenPrices;
  /** The lease that holds it. */
  readonly lease: BudgetLease;
  /** Settled or released: a second call does nothing. */
  done: boolean;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

interface GrowRow {
  item: number;
  outcome: 'ok' | 'insufficient_credits' | 'monthly_limit_reached' | 'lease_gone' | 'lease_stale';
  hold_micros: string;
  allowance: string;
  capped: boolean;
  available_micros: string;
  limit_micros: string | null;
  limit_remaining_micros: string | null;
  affordable_tokens: string;
  needed_micros: string;
  lease_delta: string;
  plenty: boolean;
}

interface SettleRow {
  item: number;
  charged: string;
  /** How much the lease row shrank; null when the lease was gone. */
  released: string | null;
}

/** One lease grow, as billing_lease_grow_batch reads it. */
interface GrowItem {
  account: string;
  lease: string;
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
interface SettleItem {
  account: string;
  lease: string;
  request: string;
  hold: string;
  release_rest: boolean;
  prompt: number;
  completion: number;
  in_picos: string;
  out_picos: string;
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
/** Spare room a grow adds to a lease, in holds of the request that asked… */
const SPARE_HOLDS = 8;
/** …only while the account could afford this many more such holds, so that near its limits one replica's lease never starves another. */
const PLENTY_HOLDS = 100;
/** How long stop() keeps retrying writes that wait for the database before giving them up. */
const STOP_PENDING_WRITES_MS = 5000;
/** How long requests are placed in a lease without asking the database again. */
const LEASE_TERM_MS = 1000;

/**
 * Prepaid chat billing (DESIGN.md section 6): a worst-case hold before the upstream call, the exact
 * charge after it. Holds are placed in this replica's budget lease on the account (BudgetLease), a
 * hold row that the database counts like any other: a request that fits in its free part needs no
 * round trip; one that does not grows the lease by one SQL call, deciding affordability and the
 * output cap exactly as a single hold would. Settlement charges the lease in one SQL call. Both calls
 * are shared by the requests that arrive together (migrations BillingBatches, BillingLeases); the
 * invariants hold across replicas because the functions lock the account rows. docs/billing.md
 */
@Injectable()
export class BillingService {
  private readonly logger = new Logger(BillingService.name);
  /** This process's current lease per account. */
  private readonly leases = new Map<string, BudgetLease>();
  /** Leases whose row exists and has not been given back: kept alive by the sweeper. */
  private readonly live = new Set<BudgetLease>();
  private readonly prices = new Map<string, TokenPrices>();
  /** Settlements started after their response and lease returns, awaited before the process stops. */
  private readonly backgroundWork = new Set<Promise<void>>();
  private readonly grows = this.batcher<GrowItem, GrowRow>('billing_lease_grow_batch', GROW_BATCH);
  private readonly settlements: StatementBatcher<SettleItem, SettleRow>;
  /** A lease row not renewed for this long is swept: its replica is dead (billing.lease_ttl_s). */
  private readonly leaseTtlMs: number;

  constructor(
    @Inject(BILLING_POOL) private readonly db: Pool,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly usage: UsageService,
    private readonly pendingWrites: PendingWrites,
  ) {
    this.leaseTtlMs = config.billing.lease_ttl_s * 1000;
    this.settlements = this.batcher('billing_lease_settle_batch', SETTLE_BATCH, config.billing.settlement_linger_ms);
  }

  async reserve(input: ReserveInput): Promise<Reservation> {
    const prices = this.pricesOf(input.model);
    const outputPicos = prices.outputPicos * BigInt(input.choices ?? 1);
    const maxOutput = input.model.max_output_tokens ?? 1;
    const worstCase = costMicros(input.promptTokens, input.requestedMaxTokens ?? maxOutput, prices.inputPicos, outputPicos);
    const held = (lease: BudgetLease, holdMicros: bigint, outputAllowance: number, capped: boolean): Reservation => ({
      requestId: input.requestId,
      holdMicros,
      outputAllowance,
      capped,
      accountId: input.accountId,
      prices,
      lease,
      done: false,
    });
    let waitedForSettlements = false;
    for (;;) {
      const lease = this.leaseOf(input.accountId);
      if (lease.tryPlace(worstCase, Date.now())) return held(lease, worstCase, input.requestedMaxTokens ?? maxOutput, false);
      // Claim the whole free part, so the database decides on what this lease still has plus the rest of the account.
      const claimed = lease.free;
      lease.used += claimed;
      lease.growing++;
      let row: GrowRow;
      try {
        row = await this.grows.submit({
          account: input.accountId,
          lease: lease.id,
          known: lease.known,
          claimed: claimed.toString(),
          prompt: input.promptTokens,
          requested: input.requestedMaxTokens,
          max_output: maxOutput,
          in_picos: prices.inputPicos.toString(),
          out_picos: outputPicos.toString(),
          ttl_ms: this.leaseTtlMs,
          // One grow in flight per lease asks for spare room, so a burst does not pile it up.
          spare: lease.growing === 1 ? SPARE_HOLDS : 0,
          plenty: PLENTY_HOLDS,
        });
      } catch (err) {
        lease.used -= claimed;
        lease.growing--;
        this.whenIdle(lease);
        throw err;
      }
      lease.growing--;
      if (row.outcome === 'lease_gone' || row.outcome === 'lease_stale') {
        lease.used -= claimed;
        if (row.outcome === 'lease_gone') this.lost(lease);
        else this.retire(lease);
        continue;
      }
      const delta = BigInt(row.lease_delta);
      if (!lease.known && delta !== 0n) {
        lease.known = true;
        this.live.add(lease);
      }
      const hold = BigInt(row.hold_micros);
      lease.size += delta;
      lease.used += hold - claimed;
      lease.tight = !row.plenty;
      lease.lastUsedAt = Date.now();
      if (row.outcome !== 'ok') {
        this.whenIdle(lease);
        // This replica's own settlements still on their way may give back what the request needs
        // (a one-at-a-time client near its limits asks again before its last charge has committed).
        if (!waitedForSettlements && lease.settling.size > 0) {
          waitedForSettlements = true;
          this.settlements.flush();
          await Promise.allSettled(lease.settling);
          continue;
        }
        throw declined(row, input);
      }
      lease.termEndsAt = lease.lastUsedAt + LEASE_TERM_MS;
      return held(lease, hold, Number(row.allowance), row.capped);
    }
  }

  /**
   * Charges the actual cost (at most the hold) to the lease, with its ledger entry and the request's
   * usage record, in one transaction. Safe to call twice or after the lease was swept. `linger`: nobody
   * waits for the answer, so the statement may wait billing.settlement_linger_ms to share its call.
   */
  async settle(reservation: Reservation, req: GatewayRequest, usage: TokenUsage, status: number, linger = false): Promise<bigint> {
    if (reservation.done) return 0n;
    reservation.done = true;
    const { lease, holdMicros, prices } = reservation;
    if (req.usage) {
      req.usage.promptTokens = usage.promptTokens;
      req.usage.completionTokens = usage.completionTokens;
    }
    const row = this.usage.claimRow(req, status);
    const releaseRest = lease.tight;
    // Unless the rest goes back to the account, the settlement shrinks the lease row by the charge
    // alone: the rest of the hold is the lease's free room already, while the statement is pending.
    const charge = min(costMicros(usage.promptTokens, usage.completionTokens, prices.inputPicos, prices.outputPicos), holdMicros);
    const pending = releaseRest ? holdMicros : charge;
    this.free(lease, holdMicros - pending);
    const item: SettleItem = {
      account: reservation.accountId,
      lease: lease.id,
      request: reservation.requestId,
      hold: holdMicros.toString(),
      release_rest: releaseRest,
      prompt: usage.promptTokens,
      completion: usage.completionTokens,
      in_picos: prices.inputPicos.toString(),
      out_picos: prices.outputPicos.toString(),
      ...(row ? { usage: row } : {}),
    };
    const submitted = this.settlements.submit(item, linger && !releaseRest);
    // Only the first attempt: a grow waiting for this lease's settlements must not wait out an outage.
    lease.settling.add(submitted);
    const attempted = () => lease.settling.delete(submitted);
    submitted.then(attempted, attempted);
    try {
      // While it is pending, its part stays used in the lease: the lease never hands out money this charge needs.
      const result = await this.pendingWrites.write({ kind: 'settlement', requestId: req.id, micros: charge }, submitted, () =>
        this.settleAgain(item),
      );
      if (result.released === null) this.lost(lease);
      else lease.size -= BigInt(result.released);
      const charged = BigInt(result.charged);
      if (row) this.usage.observeRecorded(req, status, charged);
      return charged;
    } catch (err) {
      // Let the response-close hook write the usage record instead (not for a lost one: it was logged).
      if (req.usage && !(err instanceof PendingWriteLost)) req.usage.recorded = false;
      // Whether the statement committed is not known for sure, so neither is the lease row's size: no new
      // request goes into this lease, and giving it back (billing_release) returns whatever its row holds.
      this.retire(lease);
      throw err;
    } finally {
      this.free(lease, pending);
    }
  }

  /**
   * A settlement attempted again after an attempt of unknown outcome. The first may have committed
   * (its answer lost with the connection): its usage record, or its ledger charge, written in the
   * same statement, says so, and then it is not sent again. The unique charge per request id in the
   * ledger is the last guard against charging twice.
   */
  private async settleAgain(item: SettleItem): Promise<SettleRow> {
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

  /**
   * Settles without keeping the client waiting: the hold already bounds what the request can cost,
   * so the charge is committed right after the response has been sent. A settlement that fails
   * leaves the request uncharged (its hold goes back to the lease) and the usage record to the
   * response's close hook.
   */
  settleAfterResponse(reservation: Reservation, req: GatewayRequest, usage: TokenUsage, status: number): void {
    this.track(
      this.settle(reservation, req, usage, status, true).then(
        () => undefined,
        (err: Error) => {
          // A lost pending write was logged with its amount already; it has no uncharged record either.
          if (err instanceof PendingWriteLost) return;
          this.logger.error({ err, requestId: req.id }, `Could not settle ${req.id}: ${err.message}`);
          this.usage.settlementAbandoned(req);
        },
      ),
    );
  }

  /** Gives the hold back to the lease without any charge (failed request). Idempotent. */
  async release(reservation: Reservation): Promise<void> {
    if (reservation.done) return;
    reservation.done = true;
    this.free(reservation.lease, reservation.holdMicros);
  }

  /**
   * After the HTTP server has closed: waits for pending settlements (for at most
   * STOP_PENDING_WRITES_MS while the database is unreachable, then logs each one still unwritten),
   * then gives every lease back.
   */
  async stop(): Promise<void> {
    this.settlements.flush();
    let deadline: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([...this.backgroundWork, this.pendingWrites.whenIdle()]),
      new Promise<void>((resolve) => (deadline = setTimeout(resolve, STOP_PENDING_WRITES_MS))),
    ]);
    clearTimeout(deadline);
    await this.pendingWrites.close();
    await Promise.all(this.backgroundWork);
    for (const lease of [...this.leases.values()]) this.retire(lease);
    await Promise.all(this.backgroundWork);
  }

  /**
   * The heartbeat: pushes back the expiry of this process's leases by a lease lifetime, however long
   * their requests run, so only those of dead processes expire; notices swept ones. It reaches the
   * database even with no lease, so the sweeper learns whether it can. A failure changes nothing.
   */
  async keepLiveHoldsAlive(): Promise<void> {
    const leases = [...this.live];
    const { rows } = await this.db.query<{ request_id: string }>({
      name: 'billing_renew_leases',
      text: RENEW_LEASES,
      values: [leases.map((l) => l.id), this.leaseTtlMs],
    });
    const alive = new Set(rows.map((r) => r.request_id));
    for (const lease of leases) if (!alive.has(lease.id) && this.live.has(lease)) this.lost(lease);
  }

  /**
   * Releases expired holds (left by a dead process); returns how many. Safe on several replicas at once.
   * Sweeps nothing until PostgreSQL has been up for a lease lifetime, so live replicas renew first.
   */
  async sweepExpiredHolds(batch = 1000): Promise<number> {
    let total = 0;
    for (;;) {
      const {
        rows: [row],
      } = await this.db.query<{ n: number }>(`SELECT billing_sweep_holds($1, $2) AS n`, [batch, this.leaseTtlMs]);
      total += row.n;
      if (row.n < batch) return total;
    }
  }

  private leaseOf(accountId: string): BudgetLease {
    const month = monthKey();
    let lease = this.leases.get(accountId);
    if (lease && lease.month !== month) this.retire(lease);
    if (!lease || lease.retired) {
      lease = new BudgetLease(accountId, month);
      this.leases.set(accountId, lease);
    }
    return lease;
  }

  /** A request's part of its lease is free again. */
  private free(lease: BudgetLease, micros: bigint): void {
    if (micros === 0n) return;
    lease.used -= micros;
    lease.lastUsedAt = Date.now();
    this.whenIdle(lease);
  }

  /** An idle lease goes back to the account once nothing has used it for billing.lease_idle_ms (a retired one at once). */
  private whenIdle(lease: BudgetLease): void {
    if (!lease.idle) return;
    const idleMs = this.config.billing.lease_idle_ms;
    const wait = lease.retired ? 0 : lease.lastUsedAt + idleMs - Date.now();
    if (wait <= 0) {
      this.giveBack(lease);
      return;
    }
    if (lease.idleTimer) return;
    lease.idleTimer = setTimeout(() => {
      lease.idleTimer = undefined;
      this.whenIdle(lease);
    }, wait);
    lease.idleTimer.unref();
  }

  /** No new requests go to this lease; it is given back once its running requests are done. */
  private retire(lease: BudgetLease): void {
    this.detach(lease);
    this.whenIdle(lease);
  }

  private detach(lease: BudgetLease): void {
    lease.retired = true;
    if (this.leases.get(lease.accountId) === lease) this.leases.delete(lease.accountId);
  }

  /** Its row was swept (the process stalled past its expiry): nothing to give back; its settlements go through billing_settle. */
  private lost(lease: BudgetLease): void {
    this.live.delete(lease);
    this.retire(lease);
  }

  private giveBack(lease: BudgetLease): void {
    this.detach(lease);
    clearTimeout(lease.idleTimer);
    if (!this.live.delete(lease)) return;
    this.track(
      this.db.query(`SELECT billing_release($1, $2)`, [lease.accountId, lease.id]).then(
        () => undefined,
        // Its row expires and the sweeper releases it: while the database is down, that is expected.
        (err: Error) =>
          isDatabaseUnavailable(err)
            ? this.logger.warn(`Budget lease ${lease.id} not given back (database unavailable); it expires and is swept`)
            : this.logger.error({ err }, `Could not give back budget lease ${lease.id}: ${err.message}`),
      ),
    );
  }

  private track(work: Promise<void>): void {
    this.backgroundWork.add(work);
    void work.finally(() => this.backgroundWork.delete(work));
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

  private pricesOf(model: CatalogEntry): TokenPrices {
    let prices = this.prices.get(model.id);
    if (!prices) {
      prices = tokenPrices(model);
      this.prices.set(model.id, prices);
    }
    return prices;
  }
}

function declined(row: GrowRow, input: ReserveInput): GatewayError {
  const tokens = Number(row.affordable_tokens);
  const ask =
    input.requestedMaxTokens === null
      ? `${input.promptTokens} prompt tokens and at least 1 output token cost ${usd(row.needed_micros)}`
      : `${input.promptTokens} prompt tokens and max_tokens ${input.requestedMaxTokens} may cost up to ${usd(row.needed_micros)}`;
  const affordable =
    tokens > 0 ? `at most ${tokens} output tokens are affordable` : 'not even the prompt with one output token is affordable';
  if (row.outcome === 'monthly_limit_reached') {
    return new GatewayError(
      ErrorCode.MonthlyLimitReached,
      `Monthly spending limit reached: ${usd(row.limit_remaining_micros ?? '0')} of this month's ${usd(row.limit_micros ?? '0')} limit remains, ` +
        `but ${ask}; ${affordable}. Raise the limit${input.requestedMaxTokens === null ? '' : ' or lower max_tokens'}.`,
    );
  }
  return new GatewayError(
    ErrorCode.InsufficientCredits,
    `Insufficient credits: ${usd(row.available_micros)} available, but ${ask}; ${affordable}. ` +
      `Top up credits${input.requestedMaxTokens === null ? '' : ' or lower max_tokens'}.`,
  );
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

function usd(micros: string): string {
  const value = BigInt(micros);
  return value < 0n ? `-$${microsToUsd(-value)}` : `$${microsToUsd(value)}`;
}
