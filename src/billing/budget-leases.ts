import { monthKey } from '../common/month';
import { BillingRepository, growAnswer, GrowRow, HoldAsk } from './billing-repository';
import { BudgetLease } from './budget-lease';

/**
 * This process's budget leases: the current one of each account, and the live ones (their row exists and
 * has not been given back: the heartbeat renews them). A lease nothing has used for billing.lease_idle_ms,
 * or a retired one once its requests are done, goes back to the account; `track` is handed that work.
 */
export class BudgetLeases {
  private readonly current = new Map<string, BudgetLease>();
  private readonly live = new Set<BudgetLease>();

  constructor(
    private readonly repository: BillingRepository,
    private readonly idleMs: number,
    private readonly track: (work: Promise<void>) => void,
  ) {}

  /**
   * The account's lease for requests now (the shared one, or a key budget's own when `budgetId` is given): a
   * new one when it has none, or only a retired or last month's one.
   */
  of(accountId: string, budgetId: string | null = null): BudgetLease {
    const month = monthKey();
    const name = leaseName(accountId, budgetId);
    let lease = this.current.get(name);
    if (lease && lease.month !== month) this.retire(lease);
    if (!lease || lease.retired) {
      lease = new BudgetLease(accountId, month, budgetId);
      this.current.set(name, lease);
    }
    return lease;
  }

  /**
   * Grows `lease` for a request that did not fit: the database decides on the lease's free part (claimed
   * for the request) plus what the account has left. Null when the lease turned out swept or from last
   * month: the request asks again, in a new lease.
   */
  async grow(lease: BudgetLease, ask: HoldAsk): Promise<GrowRow | null> {
    const claim = lease.claimForGrow();
    let row: GrowRow;
    try {
      row = await this.repository.grow(lease, claim, ask);
    } catch (err) {
      lease.unclaim(claim);
      this.whenIdle(lease);
      throw err;
    }
    if (row.outcome === 'lease_gone' || row.outcome === 'lease_stale') {
      lease.unclaim(claim);
      if (row.outcome === 'lease_gone') this.lost(lease);
      else this.retire(lease);
      return null;
    }
    if (lease.applyGrow(claim, growAnswer(row), Date.now())) this.live.add(lease);
    // A declined grow may leave the lease idle.
    if (row.outcome !== 'ok') this.whenIdle(lease);
    return row;
  }

  /**
   * The heartbeat: pushes back the expiry of the live leases' rows by a lease lifetime; a lease whose row
   * is no longer there was swept. It reaches the database even with no lease, so the sweeper learns whether it can.
   */
  async keepAlive(): Promise<void> {
    const leases = [...this.live];
    const alive = await this.repository.renewLeases(leases.map((l) => l.id));
    for (const lease of leases) if (!alive.has(lease.id) && this.live.has(lease)) this.lost(lease);
  }

  /** A request's part of its lease is free again. */
  release(lease: BudgetLease, micros: bigint): void {
    if (micros === 0n) return;
    lease.release(micros, Date.now());
    this.whenIdle(lease);
  }

  /** No new requests go to this lease; it is given back once its running requests are done. */
  retire(lease: BudgetLease): void {
    this.detach(lease);
    this.whenIdle(lease);
  }

  /** Its row was swept (the process stalled past its expiry): nothing to give back; its settlements go through billing_settle. */
  lost(lease: BudgetLease): void {
    this.live.delete(lease);
    this.retire(lease);
  }

  /** At shutdown, after the last request: every lease goes back. */
  retireAll(): void {
    for (const lease of [...this.current.values()]) this.retire(lease);
  }

  private whenIdle(lease: BudgetLease): void {
    lease.whenIdle(this.idleMs, () => {
      this.detach(lease);
      if (this.live.delete(lease)) this.track(this.repository.giveBack(lease));
    });
  }

  private detach(lease: BudgetLease): void {
    lease.retire();
    const name = leaseName(lease.accountId, lease.budgetId);
    if (this.current.get(name) === lease) this.current.delete(name);
  }
}

function leaseName(accountId: string, budgetId: string | null): string {
  return budgetId === null ? accountId : `${accountId}/${budgetId}`;
}
