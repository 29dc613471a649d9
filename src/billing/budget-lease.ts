import { randomBytes } from 'node:crypto';

/**
 * A replica's budget lease on one account (docs/billing.md): a hold row of its own in the database,
 * inside which this process places its requests' worst cases without a round trip. In memory it
 * knows the row's size and the part in use; a grow in flight has claimed the free part it found,
 * so concurrent requests never place more than the size.
 */
export class BudgetLease {
  readonly id = `lease:${randomBytes(12).toString('hex')}`;
  /** The row's amount, as far as the calls answered so far have moved it. */
  size = 0n;
  /** Worst cases of running requests, and the parts claimed by grows in flight. */
  used = 0n;
  /** Grows in flight. */
  growing = 0;
  /** Its row exists (it may have been swept, which the next call finds out); created by the first grow that puts something in it. */
  known = false;
  /** At the last grow the account could not afford spare room: settlements give back what they do not charge. */
  tight = true;
  /** Takes no new requests (a new month, swept, idle, or the process is stopping). */
  retired = false;
  /** Requests are placed without a grow only until then, so account changes reach this lease promptly. */
  termEndsAt = 0;
  lastUsedAt = 0;
  idleTimer: NodeJS.Timeout | undefined;
  /** Settlements of its requests not yet answered by the database. */
  readonly settling = new Set<Promise<unknown>>();

  constructor(
    readonly accountId: string,
    readonly month: string,
  ) {}

  get free(): bigint {
    return this.size - this.used;
  }

  get idle(): boolean {
    return this.used === 0n && this.growing === 0;
  }

  /**
   * Places a worst case in the free part, if it fits and the term still runs. Never when the account
   * is near its limits: then every request asks the database, which sees the account's latest state.
   */
  tryPlace(worstCase: bigint, now: number): boolean {
    if (this.tight || this.retired || now >= this.termEndsAt || worstCase > this.free) return false;
    this.used += worstCase;
    this.lastUsedAt = now;
    return true;
  }
}
