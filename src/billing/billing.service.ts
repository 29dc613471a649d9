import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';
import { PendingWrites } from '../usage/pending-writes';
import { UsageRecordValues } from '../usage/usage-record';
import { BillingRepository, HoldAsk, settleItem } from './billing-repository';
import { BudgetLease } from './budget-lease';
import { BudgetLeases } from './budget-leases';
import { declined } from './declined';
import { Reservation, ReserveInput } from './reservation';
import { worstCaseMicros } from './request-cost';
import { holdPrices } from './price-variants';
import { toolHoldPicos } from './tool-fees';

export type { KeyBudget, Reservation, ReserveInput } from './reservation';

/** How long stop() keeps retrying writes that wait for the database before giving them up. */
const STOP_PENDING_WRITES_MS = 5000;

/**
 * Prepaid chat billing (DESIGN.md section 6): a worst-case hold before the upstream call, the exact
 * charge after it. Holds are placed in this replica's budget lease on the account (BudgetLease): a
 * request that fits in its free part needs no round trip; one that does not grows the lease by one SQL
 * call (BillingRepository), deciding affordability and the output cap exactly as a single hold would.
 * Settlement charges the lease in one SQL call. docs/billing.md
 */
@Injectable()
export class BillingService {
  private readonly leases: BudgetLeases;
  /** Settlements and lease returns under way, awaited before the process stops. */
  private readonly backgroundWork = new Set<Promise<void>>();

  constructor(
    private readonly repository: BillingRepository,
    private readonly pendingWrites: PendingWrites,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
  ) {
    this.leases = new BudgetLeases(repository, config.billing.lease_idle_ms, (work) => this.track(work));
  }

  async reserve(input: ReserveInput): Promise<Reservation> {
    // The worst case of every token class (DESIGN.md section 10): each prompt token at the highest input-class
    // price, each output token at the highest output-class price, so that no charge can exceed the hold.
    // With price variants (DESIGN.md section 12.2), the prices of the dearest outcome the request asked for, and
    // the fees of the server tools it offers.
    const prices = holdPrices(input.model, input.priceOptions, input.promptTokens);
    let ask: HoldAsk = {
      promptTokens: input.promptTokens,
      requestedMaxTokens: input.requestedMaxTokens,
      maxOutputTokens: input.model.max_output_tokens ?? 1,
      inputPicos: prices.holdInput,
      outputPicos: prices.holdOutput * BigInt(input.choices ?? 1),
      fixedPicos: toolHoldPicos(input.model, input.serverTools),
    };
    let worstCase = worstCaseMicros(ask.promptTokens, ask.requestedMaxTokens ?? ask.maxOutputTokens, ask.inputPicos, ask.outputPicos, ask.fixedPicos);
    const least = Math.min(input.minOutputTokens ?? 1, ask.maxOutputTokens);
    const held = (lease: BudgetLease, holdMicros: bigint, outputAllowance: number, capped: boolean): Reservation => {
      const budgetId = input.key?.budgetId ?? null;
      // An allowance held at the upstream's least output (below) is no limit the client set: it is sent upstream.
      const sent = capped || ask.requestedMaxTokens !== input.requestedMaxTokens;
      return { requestId: input.requestId, accountId: input.accountId, budgetId, lease, holdMicros, outputAllowance, capped: sent, done: false, tokens: input.tokens };
    };
    let waitedForSettlements = false;
    for (;;) {
      // A key with a limit of its own holds in its own lease on the account (docs/billing.md, "Key limits").
      const lease = this.leases.of(input.accountId, input.key?.limited ? input.key.budgetId : null);
      if (lease.tryPlace(worstCase, Date.now())) return held(lease, worstCase, ask.requestedMaxTokens ?? ask.maxOutputTokens, false);
      // This replica's own settlements on their way may give back what the request needs (a one-at-a-time
      // client near its limits asks again before its last charge has committed). Those under way when the
      // grow is sent count too: one may commit after the decision, yet be answered before it.
      const settlingWhenSent = lease.settling;
      const row = await this.leases.grow(lease, ask);
      if (!row) continue;
      if (row.outcome === 'ok' && row.capped && Number(row.allowance) < least) {
        // Cut below the least output limit the upstream takes (OpenAI's Responses API: 16), the answer could not be
        // asked for. The hold goes back and is asked again for that least answer: the database then declines it,
        // naming what binds (credits, the account's limit, the key's), or holds it should money have come back since.
        this.leases.release(lease, BigInt(row.hold_micros));
        ask = { ...ask, requestedMaxTokens: least };
        worstCase = worstCaseMicros(ask.promptTokens, least, ask.inputPicos, ask.outputPicos, ask.fixedPicos);
        continue;
      }
      if (row.outcome === 'ok') return held(lease, BigInt(row.hold_micros), Number(row.allowance), row.capped);
      if (waitedForSettlements || !(settlingWhenSent || lease.settling)) throw declined(row, input);
      waitedForSettlements = true;
      this.repository.flushSettlements();
      await lease.settlementsAnswered();
    }
  }

  /**
   * Charges `costMicros` (the request's cost: requestCost, src/billing/request-cost.ts), at most the hold, to
   * the lease, with its ledger entry and `record` (the request's usage record, cost = the charge), in one
   * transaction; resolves to the charge. Safe to call twice or after the lease was swept. `linger`: nobody waits for the answer, so the statement may wait
   * billing.settlement_linger_ms to share its call. Rejects with PendingWriteLost (logged already) or
   * another error: then the record was not written, and the request stays uncharged.
   */
  settle(reservation: Reservation, costMicros: bigint, record: UsageRecordValues | null, linger = false): Promise<bigint> {
    if (reservation.done) return Promise.resolve(0n);
    reservation.done = true;
    if (record) reservation.tokens?.settle(record.prompt_tokens + record.completion_tokens);
    const charged = this.charge(reservation, costMicros, record, linger);
    this.track(charged.then(noop, noop));
    return charged;
  }

  /** Gives the hold back to the lease without any charge (failed request). Idempotent. */
  async release(reservation: Reservation): Promise<void> {
    if (reservation.done) return;
    reservation.done = true;
    reservation.tokens?.settle(0);
    this.leases.release(reservation.lease, reservation.holdMicros);
  }

  /**
   * After the HTTP server has closed: waits for pending settlements (for at most
   * STOP_PENDING_WRITES_MS while the database is unreachable, then logs each one still unwritten),
   * then gives every lease back.
   */
  async stop(): Promise<void> {
    this.repository.flushSettlements();
    let deadline: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([...this.backgroundWork, this.pendingWrites.whenIdle()]),
      new Promise<void>((resolve) => (deadline = setTimeout(resolve, STOP_PENDING_WRITES_MS))),
    ]);
    clearTimeout(deadline);
    await this.pendingWrites.close();
    await Promise.all(this.backgroundWork);
    this.leases.retireAll();
    await Promise.all(this.backgroundWork);
  }

  /**
   * The heartbeat: keeps this process's leases from expiring, however long their requests run, so only
   * those of dead processes expire; notices swept ones. A failure changes nothing.
   */
  keepLiveHoldsAlive(): Promise<void> {
    return this.leases.keepAlive();
  }

  /** Releases expired holds (left by a dead process); returns how many. Safe on several replicas at once. */
  sweepExpiredHolds(batch = 1000): Promise<number> {
    return this.repository.sweepExpiredHolds(batch);
  }

  /** What a request of this cost is charged: its cost, at most its hold (the one rule; answers show this figure). */
  chargeFor(reservation: Reservation, costMicros: bigint): bigint {
    return min(costMicros, reservation.holdMicros);
  }

  private async charge(reservation: Reservation, costMicros: bigint, record: UsageRecordValues | null, linger: boolean): Promise<bigint> {
    const { lease, holdMicros } = reservation;
    const charge = this.chargeFor(reservation, costMicros);
    const { releaseRest, pending } = lease.startSettlement(holdMicros, charge, Date.now());
    const item = settleItem(reservation, costMicros, record, releaseRest);
    const submitted = this.repository.settle(item, linger && !releaseRest);
    // Only the first attempt: a grow waiting for this lease's settlements must not wait out an outage.
    lease.awaitSettlement(submitted);
    try {
      // While it is pending, its part stays used in the lease: the lease never hands out money this charge needs.
      const result = await this.pendingWrites.write({ kind: 'settlement', requestId: reservation.requestId, micros: charge }, submitted, () =>
        this.repository.settleAgain(item),
      );
      if (result.released === null) this.leases.lost(lease);
      else lease.shrink(BigInt(result.released));
      return BigInt(result.charged);
    } catch (err) {
      // Whether the statement committed is not known for sure, so neither is the lease row's size: no new
      // request goes into this lease, and giving it back (billing_release) returns whatever its row holds.
      this.leases.retire(lease);
      throw err;
    } finally {
      this.leases.release(lease, pending);
    }
  }

  private track(work: Promise<void>): void {
    this.backgroundWork.add(work);
    void work.finally(() => this.backgroundWork.delete(work));
  }
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

function noop(): void {}
