import { randomBytes } from 'node:crypto';

/** How long requests are placed in a lease without asking the database again. */
export const LEASE_TERM_MS = 1000;
/** Spare room a grow adds to a lease, in holds of the request that asked… */
export const SPARE_HOLDS = 8;
/** …only while the account could afford this many more such holds, so that near its limits one replica's lease never starves another. */
export const PLENTY_HOLDS = 100;

/** The free part a grow took from its lease for its request: hand it back with `applyGrow` or `unclaim`. */
export interface GrowClaim {
  readonly claimed: bigint;
  /** Holds of spare room to ask for: only the one grow in flight on the lease asks, so a burst does not pile it up. */
  readonly spareHolds: number;
}

/** The database's answer to a grow it decided (not for a lease it found gone or stale). */
export interface GrowAnswer {
  /** The request got its hold. */
  granted: boolean;
  /** The request's hold (0 when declined). */
  hold: bigint;
  /** How much the lease row grew (negative: it gave the claimed part back). */
  delta: bigint;
  /** The account could still afford PLENTY_HOLDS more such holds. */
  plenty: boolean;
}

/** How a settlement starting on the lease moves it. */
export interface SettlementStart {
  /** Near the limits: the part of the hold not charged goes back to the account, not to the lease. */
  releaseRest: boolean;
  /** The part that stays in use until the settlement is answered: `free` it then. */
  pending: bigint;
}

/**
 * A replica's budget lease on one account (docs/billing.md): a hold row of its own in the database,
 * inside which this process places its requests' worst cases without a round trip. In memory it
 * knows the row's size and the part in use; a grow in flight has claimed the free part it found,
 * so concurrent requests never place more than the size. Every change of that state is a method here.
 */
export class BudgetLease {
  readonly id = `lease:${randomBytes(12).toString('hex')}`;
  /** The row's amount, as far as the calls answered so far have moved it. */
  private sizeMicros = 0n;
  /** Worst cases of running requests, and the parts claimed by grows in flight. */
  private usedMicros = 0n;
  private growsInFlight = 0;
  private rowExists = false;
  private nearLimits = true;
  private isRetired = false;
  /** Requests are placed without a grow only until then, so account changes reach this lease promptly. */
  private termEndsAt = 0;
  private lastUsedAt = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Settlements of its requests not yet answered by the database (their first attempt). */
  private readonly settlements = new Set<Promise<unknown>>();

  constructor(
    readonly accountId: string,
    readonly month: string,
    /** A key budget's own lease (counted against the key's limit too); null: the account's shared lease. */
    readonly budgetId: string | null = null,
  ) {}

  get size(): bigint {
    return this.sizeMicros;
  }

  get used(): bigint {
    return this.usedMicros;
  }

  get free(): bigint {
    return this.sizeMicros - this.usedMicros;
  }

  /** Its row exists (it may have been swept, which the next call finds out); created by the first grow that puts something in it. */
  get known(): boolean {
    return this.rowExists;
  }

  /** At the last grow the account could not afford spare room: settlements give back what they do not charge. */
  get tight(): boolean {
    return this.nearLimits;
  }

  /** Takes no new requests (a new month, swept, idle, a failed settlement, or the process is stopping). */
  get retired(): boolean {
    return this.isRetired;
  }

  get idle(): boolean {
    return this.usedMicros === 0n && this.growsInFlight === 0;
  }

  /**
   * Places a worst case in the free part, if it fits and the term still runs. Never when the account
   * is near its limits: then every request asks the database, which sees the account's latest state.
   */
  tryPlace(worstCase: bigint, now: number): boolean {
    if (this.nearLimits || this.isRetired || now >= this.termEndsAt || worstCase > this.free) return false;
    this.usedMicros += worstCase;
    this.lastUsedAt = now;
    return true;
  }

  /** A request that does not fit claims the whole free part, so the database decides on it plus the rest of the account. */
  claimForGrow(): GrowClaim {
    const claimed = this.free;
    this.usedMicros += claimed;
    this.growsInFlight++;
    return { claimed, spareHolds: this.growsInFlight === 1 ? SPARE_HOLDS : 0 };
  }

  /** The grow failed, or found the lease gone or stale: its claimed part is free again. */
  unclaim(claim: GrowClaim): void {
    this.growsInFlight--;
    this.usedMicros -= claim.claimed;
  }

  /**
   * The database decided the grow: the row moved by `delta`, the request holds `hold` of it in place of
   * the claimed part. Returns true when this grow created the lease's row.
   */
  applyGrow(claim: GrowClaim, answer: GrowAnswer, now: number): boolean {
    this.growsInFlight--;
    const created = !this.rowExists && answer.delta !== 0n;
    if (created) this.rowExists = true;
    this.sizeMicros += answer.delta;
    this.usedMicros += answer.hold - claim.claimed;
    this.nearLimits = !answer.plenty;
    this.lastUsedAt = now;
    if (answer.granted) this.termEndsAt = now + LEASE_TERM_MS;
    return created;
  }

  /**
   * A settlement of `hold` charging `charge` starts. Unless the rest goes back to the account (near the
   * limits), the statement shrinks the row by the charge alone: the rest of the hold is free room at once.
   */
  startSettlement(hold: bigint, charge: bigint, now: number): SettlementStart {
    const releaseRest = this.nearLimits;
    const pending = releaseRest ? hold : charge;
    this.release(hold - pending, now);
    return { releaseRest, pending };
  }

  /** Notes a settlement's first attempt until the database answers it. */
  awaitSettlement(answered: Promise<unknown>): void {
    this.settlements.add(answered);
    const done = () => this.settlements.delete(answered);
    answered.then(done, done);
  }

  /** Settlements of its requests are on their way (their first attempt not yet answered). */
  get settling(): boolean {
    return this.settlements.size > 0;
  }

  /** Resolves once its settlements now in flight are answered; null when none is. */
  settlementsAnswered(): Promise<unknown> | null {
    return this.settlements.size > 0 ? Promise.allSettled(this.settlements) : null;
  }

  /** A settlement took `released` out of the row. */
  shrink(released: bigint): void {
    this.sizeMicros -= released;
  }

  /** A request's part is free again (released, or its settlement answered). */
  release(micros: bigint, now: number): void {
    if (micros === 0n) return;
    this.usedMicros -= micros;
    this.lastUsedAt = now;
  }

  /** No new requests go to this lease. */
  retire(): void {
    this.isRetired = true;
  }

  /**
   * Calls `giveBack` once the lease is idle and nothing has used it for `idleMs` (a retired one at once);
   * while it is not due, a timer looks again then.
   */
  whenIdle(idleMs: number, giveBack: () => void): void {
    if (!this.idle) return;
    const wait = this.isRetired ? 0 : this.lastUsedAt + idleMs - Date.now();
    if (wait <= 0) {
      this.retire();
      clearTimeout(this.idleTimer);
      giveBack();
      return;
    }
    if (this.idleTimer) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      this.whenIdle(idleMs, giveBack);
    }, wait);
    this.idleTimer.unref();
  }
}
