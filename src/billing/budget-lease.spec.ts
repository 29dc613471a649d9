import { BudgetLease, GrowAnswer, LEASE_TERM_MS, SPARE_HOLDS } from './budget-lease';

const NOW = 1_000_000;

/** A lease the database grew once for a hold of `hold`, with spare room when `plenty`. */
function grownLease(hold: bigint, plenty: boolean): BudgetLease {
  const sut = new BudgetLease('account', '2026-11-01');
  const claim = sut.claimForGrow();
  sut.applyGrow(claim, granted(hold, plenty ? hold * BigInt(1 + SPARE_HOLDS) : hold, plenty), NOW);
  return sut;
}

function granted(hold: bigint, delta: bigint, plenty: boolean): GrowAnswer {
  return { granted: true, hold, delta, plenty };
}

describe(BudgetLease.name, () => {
  describe('place', () => {
    it('places nothing before the database has decided for it (a new lease is tight and empty)', () => {
      const sut = new BudgetLease('account', '2026-11-01');
      expect(sut.tryPlace(1n, NOW)).toBe(false);
      expect(sut).toMatchObject({ size: 0n, used: 0n, tight: true, known: false });
    });

    it('places worst cases in the free part while the term runs, and no more than fits', () => {
      const sut = grownLease(100n, true); // 100 in use, 800 spare
      for (let i = 0; i < SPARE_HOLDS; i++) expect(sut.tryPlace(100n, NOW + 1)).toBe(true);
      expect(sut).toMatchObject({ size: 900n, used: 900n, free: 0n });
      expect(sut.tryPlace(1n, NOW + 1)).toBe(false);
    });

    it('places nothing once the term has ended, near the limits, or when retired', () => {
      expect(grownLease(100n, true).tryPlace(100n, NOW + LEASE_TERM_MS)).toBe(false);
      expect(grownLease(100n, false).tryPlace(0n, NOW + 1)).toBe(false);
      const retired = grownLease(100n, true);
      retired.retire();
      expect(retired.tryPlace(100n, NOW + 1)).toBe(false);
    });
  });

  describe('grow', () => {
    it('claims the whole free part, and only the first grow in flight asks for spare room', () => {
      const sut = grownLease(100n, true);
      expect(sut.tryPlace(300n, NOW + 1)).toBe(true);
      const first = sut.claimForGrow();
      const second = sut.claimForGrow();
      expect(first).toEqual({ claimed: 500n, spareHolds: SPARE_HOLDS });
      expect(second).toEqual({ claimed: 0n, spareHolds: 0 });
      expect(sut).toMatchObject({ used: 900n, free: 0n, idle: false });
    });

    it('applies a granted grow: the row moves by the delta, the request holds its hold in place of the claim', () => {
      const sut = grownLease(100n, true);
      const claim = sut.claimForGrow(); // 800
      // A hold of 1000: the row grows by 1000 − 800, plus spare room of 8 × 1000.
      expect(sut.applyGrow(claim, granted(1000n, 200n + 8000n, true), NOW + 5)).toBe(false);
      expect(sut).toMatchObject({ size: 9100n, used: 1100n, free: 8000n, tight: false });
      expect(sut.tryPlace(1000n, NOW + 5 + LEASE_TERM_MS - 1)).toBe(true);
    });

    it('knows its row from the first grow that put something in it', () => {
      const sut = new BudgetLease('account', '2026-11-01');
      expect(sut.applyGrow(sut.claimForGrow(), { granted: false, hold: 0n, delta: 0n, plenty: false }, NOW)).toBe(false);
      expect(sut.known).toBe(false);
      expect(sut.applyGrow(sut.claimForGrow(), granted(50n, 50n, false), NOW)).toBe(true);
      expect(sut.known).toBe(true);
    });

    it('gives the claimed part back when the database declines, and turns tight', () => {
      const sut = grownLease(100n, true);
      const claim = sut.claimForGrow();
      sut.applyGrow(claim, { granted: false, hold: 0n, delta: -claim.claimed, plenty: false }, NOW + LEASE_TERM_MS + 1);
      expect(sut).toMatchObject({ size: 100n, used: 100n, free: 0n, tight: true });
    });

    it('frees the claimed part of a grow that failed or found the lease gone', () => {
      const sut = grownLease(100n, true);
      const claim = sut.claimForGrow();
      sut.unclaim(claim);
      expect(sut).toMatchObject({ used: 100n, free: 800n });
      expect(sut.claimForGrow().spareHolds).toBe(SPARE_HOLDS);
    });
  });

  describe('settle', () => {
    it('away from the limits, keeps only the charge in use while the settlement is pending', () => {
      const sut = grownLease(1000n, true);
      expect(sut.startSettlement(1000n, 225n, NOW + 1)).toEqual({ releaseRest: false, pending: 225n });
      expect(sut).toMatchObject({ used: 225n, free: 8775n });
      sut.shrink(225n); // the statement took the charge out of the row
      sut.release(225n, NOW + 2);
      expect(sut).toMatchObject({ size: 8775n, used: 0n, idle: true });
    });

    it('in tight mode, keeps the whole hold in use and gives the rest back to the account', () => {
      const sut = grownLease(1000n, false);
      expect(sut.startSettlement(1000n, 225n, NOW + 1)).toEqual({ releaseRest: true, pending: 1000n });
      expect(sut).toMatchObject({ used: 1000n, free: 0n });
      sut.shrink(1000n);
      sut.release(1000n, NOW + 2);
      expect(sut).toMatchObject({ size: 0n, used: 0n });
    });

    it('tells a grow when its settlements in flight have been answered', async () => {
      const sut = grownLease(1000n, false);
      expect(sut.settlementsAnswered()).toBeNull();
      let answer!: () => void;
      sut.awaitSettlement(new Promise<void>((resolve) => (answer = resolve)));
      const answered = sut.settlementsAnswered();
      expect(answered).not.toBeNull();
      answer();
      await answered;
      await Promise.resolve();
      expect(sut.settlementsAnswered()).toBeNull();
    });
  });

  describe('give back', () => {
    beforeEach(() => jest.useFakeTimers({ now: NOW }));
    afterEach(() => jest.useRealTimers());

    it('is given back once nothing has used it for the idle time, and not while a request runs', () => {
      const sut = grownLease(100n, true);
      const giveBack = jest.fn();
      sut.whenIdle(1000, giveBack);
      expect(giveBack).not.toHaveBeenCalled(); // its request still runs
      sut.release(100n, NOW + 10);
      sut.whenIdle(1000, giveBack);
      jest.advanceTimersByTime(1000 + 10 - 1);
      expect(giveBack).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(giveBack).toHaveBeenCalledTimes(1);
      expect(sut.retired).toBe(true);
    });

    it('waits again when a request used it meanwhile', () => {
      const sut = grownLease(100n, true);
      sut.release(100n, NOW);
      const giveBack = jest.fn();
      sut.whenIdle(1000, giveBack);
      jest.advanceTimersByTime(500);
      expect(sut.tryPlace(100n, NOW + 500)).toBe(true);
      sut.release(100n, NOW + 500);
      jest.advanceTimersByTime(500);
      expect(giveBack).not.toHaveBeenCalled();
      jest.advanceTimersByTime(500);
      expect(giveBack).toHaveBeenCalledTimes(1);
    });

    it('goes back at once when retired and idle', () => {
      const sut = grownLease(100n, true);
      sut.retire();
      const giveBack = jest.fn();
      sut.whenIdle(60_000, giveBack);
      expect(giveBack).not.toHaveBeenCalled();
      sut.release(100n, NOW);
      sut.whenIdle(60_000, giveBack);
      expect(giveBack).toHaveBeenCalledTimes(1);
    });
  });
});
