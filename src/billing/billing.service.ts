import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { CatalogEntry, GatewayConfig } from '../config/gateway-config.schema';
import { ErrorCode, GatewayError } from '../common/errors';
import { GatewayRequest } from '../common/http/gateway-request';
import { microsToUsd } from '../common/money';
import { usageRecordInsert, UsageRecordValues, UsageService } from '../usage/usage.service';
import { BILLING_POOL } from './billing-pool';
import { StatementBatcher } from './statement-batcher';
import { TokenPrices, tokenPrices } from './token-prices';

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
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

interface ReserveRow {
  item: number;
  outcome: 'ok' | 'insufficient_credits' | 'monthly_limit_reached';
  hold_micros: string;
  allowance: string;
  capped: boolean;
  available_micros: string;
  limit_micros: string | null;
  limit_remaining_micros: string | null;
  affordable_tokens: string;
  needed_micros: string;
}

interface SettleRow {
  item: number;
  charged: string;
}

/** One hold, as billing_reserve_batch reads it. */
interface HoldItem {
  account: string;
  request: string;
  prompt: number;
  requested: number | null;
  max_output: number;
  in_picos: string;
  out_picos: string;
  ttl_ms: number;
}

/** One settlement, as billing_settle_batch reads it, with the request's usage record unless written already. */
interface SettleItem {
  account: string;
  request: string;
  prompt: number;
  completion: number;
  in_picos: string;
  out_picos: string;
  usage?: UsageRecordValues;
}

const RESERVE_BATCH = `SELECT * FROM billing_reserve_batch($1::jsonb)`;
// One statement, so one round trip and one transaction: the charges and the requests' usage records.
const SETTLE_BATCH = `WITH settled AS (SELECT item, charged FROM billing_settle_batch($1::jsonb)),
  recorded AS (${usageRecordInsert(
    's.usage',
    's.charged',
    `(SELECT settled.charged, $1::jsonb -> settled.item -> 'usage' AS usage FROM settled WHERE $1::jsonb -> settled.item ? 'usage') AS s`,
  )})
  SELECT item, charged FROM settled`;
/** Batches running at once per statement; more requests wait and share the next one. */
const BATCHES_IN_FLIGHT = 1;
const MAX_BATCH = 500;

/**
 * Prepaid chat billing (DESIGN.md section 6): a worst-case hold before the upstream call, the exact
 * charge after it. Each step is one SQL function call, shared by the requests that arrive together
 * (migration BillingBatches), so one round trip and one transaction; the invariants hold across
 * replicas because the functions lock the account rows.
 */
@Injectable()
export class BillingService implements BeforeApplicationShutdown {
  private readonly logger = new Logger(BillingService.name);
  /** Holds of requests still running in this process, with their time-to-live, kept alive by the sweeper. */
  private readonly live = new Map<string, number>();
  private readonly prices = new Map<string, TokenPrices>();
  /** Settlements started after their response, awaited before the process stops. */
  private readonly settling = new Set<Promise<void>>();
  private readonly holds = this.batcher<HoldItem, ReserveRow>('billing_reserve_batch', RESERVE_BATCH);
  private readonly settlements = this.batcher<SettleItem, SettleRow>('billing_settle_batch', SETTLE_BATCH);

  constructor(
    @Inject(BILLING_POOL) private readonly db: Pool,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly usage: UsageService,
  ) {}

  async reserve(input: ReserveInput): Promise<Reservation> {
    const prices = this.pricesOf(input.model);
    const ttlMs = this.holdTtlMs(input.model);
    const row = await this.holds.submit({
      account: input.accountId,
      request: input.requestId,
      prompt: input.promptTokens,
      requested: input.requestedMaxTokens,
      max_output: input.model.max_output_tokens ?? 1,
      in_picos: prices.inputPicos.toString(),
      out_picos: (prices.outputPicos * BigInt(input.choices ?? 1)).toString(),
      ttl_ms: ttlMs,
    });
    if (row.outcome !== 'ok') throw declined(row, input);
    this.live.set(input.requestId, ttlMs);
    return {
      requestId: input.requestId,
      holdMicros: BigInt(row.hold_micros),
      outputAllowance: Number(row.allowance),
      capped: row.capped,
      accountId: input.accountId,
      prices,
    };
  }

  /**
   * Releases the hold and charges the actual cost (at most the hold), with its ledger entry and the
   * request's usage record, in one transaction. Safe to call twice or after the sweeper took the hold.
   */
  async settle(reservation: Reservation, req: GatewayRequest, usage: TokenUsage, status: number): Promise<bigint> {
    this.live.delete(reservation.requestId);
    if (req.usage) {
      req.usage.promptTokens = usage.promptTokens;
      req.usage.completionTokens = usage.completionTokens;
    }
    const row = this.usage.claimRow(req, status);
    try {
      const result = await this.settlements.submit({
        account: reservation.accountId,
        request: reservation.requestId,
        prompt: usage.promptTokens,
        completion: usage.completionTokens,
        in_picos: reservation.prices.inputPicos.toString(),
        out_picos: reservation.prices.outputPicos.toString(),
        ...(row ? { usage: row } : {}),
      });
      const charged = BigInt(result.charged);
      if (row) this.usage.observeRecorded(req, status, charged);
      return charged;
    } catch (err) {
      // Let the response-close hook write the usage record instead.
      if (req.usage) req.usage.recorded = false;
      throw err;
    }
  }

  /**
   * Settles without keeping the client waiting: the hold already bounds what the request can cost,
   * so the charge is committed right after the response has been sent. A settlement that fails
   * leaves the hold to the sweeper (the request is then not charged) and the usage record to the
   * response's close hook.
   */
  settleAfterResponse(reservation: Reservation, req: GatewayRequest, usage: TokenUsage, status: number): void {
    const settlement = this.settle(reservation, req, usage, status).then(
      () => undefined,
      (err: Error) => {
        this.logger.error({ err, requestId: req.id }, `Could not settle ${req.id}: ${err.message}`);
        this.usage.settlementAbandoned(req);
      },
    );
    this.settling.add(settlement);
    void settlement.finally(() => this.settling.delete(settlement));
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all(this.settling);
  }

  /** Gives the hold back without any charge (failed request). Idempotent. */
  async release(reservation: Reservation): Promise<void> {
    this.live.delete(reservation.requestId);
    await this.db.query(`SELECT billing_release($1, $2)`, [reservation.accountId, reservation.requestId]);
  }

  /** Pushes back the expiry of this process's running holds, so only holds of dead processes expire. */
  async keepLiveHoldsAlive(): Promise<void> {
    if (this.live.size === 0) return;
    const ids = [...this.live.keys()];
    const ttls = [...this.live.values()];
    await this.db.query(
      `UPDATE holds h SET expires_at = now() + v.ttl_ms * interval '1 millisecond'
         FROM unnest($1::text[], $2::integer[]) AS v(request_id, ttl_ms)
        WHERE h.request_id = v.request_id`,
      [ids, ttls],
    );
  }

  /** Releases expired holds (left by a crashed process); returns how many. Safe on several replicas at once. */
  async sweepExpiredHolds(batch = 1000): Promise<number> {
    let total = 0;
    for (;;) {
      const {
        rows: [row],
      } = await this.db.query<{ n: number }>(`SELECT billing_sweep_holds($1) AS n`, [batch]);
      total += row.n;
      if (row.n < batch) return total;
    }
  }

  /** Group commit over a batch function: it takes the items as JSON and its rows carry their item's position. */
  private batcher<I, R extends { item: number }>(name: string, text: string): StatementBatcher<I, R> {
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

  /** A hold outlives its request's upstream timeout by the configured margin. */
  private holdTtlMs(model: CatalogEntry): number {
    const requestMs = this.config.providers[model.provider]?.timeouts.request_ms ?? 60_000;
    return requestMs + this.config.billing.hold_sweep_margin_s * 1000;
  }
}

function declined(row: ReserveRow, input: ReserveInput): GatewayError {
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

function usd(micros: string): string {
  const value = BigInt(micros);
  return value < 0n ? `-$${microsToUsd(-value)}` : `$${microsToUsd(value)}`;
}
