export type CircuitState = 'closed' | 'open' | 'half-open';

/** The failure ratio that opens a circuit, over a window with at least WINDOW_MIN_CALLS calls. */
export const WINDOW_MS = 10_000;
export const WINDOW_MIN_CALLS = 20;
export const WINDOW_FAILURE_RATIO = 0.5;

/**
 * One deployment's circuit on this replica (docs/configuration.md, "Deployments"): open after `threshold`
 * consecutive failures or a failure ratio over a short window, for `cooldownMs`; then one probe is let
 * through (half-open), whose success closes it and whose failure opens it again. Times are `Date.now()` values
 * passed in, so that a test can drive the clock.
 */
export class CircuitBreaker {
  private opened = false;
  private openUntil = 0;
  private probeOut = false;
  private consecutiveFailures = 0;
  private windowStart = 0;
  private windowCalls = 0;
  private windowFailures = 0;

  constructor(
    private readonly threshold: number,
    private readonly cooldownMs: number,
  ) {}

  state(now: number): CircuitState {
    if (!this.opened) return 'closed';
    return now >= this.openUntil ? 'half-open' : 'open';
  }

  /** Whether a request could be sent now (without taking the half-open probe). */
  isAvailable(now: number): boolean {
    return !this.opened || (now >= this.openUntil && !this.probeOut);
  }

  /** A request is sent now: when half-open, it is the one probe. */
  admit(now: number): void {
    if (this.opened && now >= this.openUntil) this.probeOut = true;
  }

  /** Milliseconds until a request could be sent (0 when available). */
  availableInMs(now: number): number {
    if (!this.opened) return 0;
    // A probe in flight: its answer decides; another probe can start a cooldown later at the latest.
    if (now >= this.openUntil) return this.probeOut ? this.cooldownMs : 0;
    return this.openUntil - now;
  }

  succeeded(now: number): void {
    this.count(now, false);
    this.consecutiveFailures = 0;
    if (this.probeOut) this.close();
  }

  failed(now: number): void {
    this.count(now, true);
    this.consecutiveFailures++;
    if (this.probeOut) return this.openFor(this.cooldownMs, now);
    if (this.opened) return;
    const ratioReached = this.windowCalls >= WINDOW_MIN_CALLS && this.windowFailures >= this.windowCalls * WINDOW_FAILURE_RATIO;
    if (this.consecutiveFailures >= this.threshold || ratioReached) this.openFor(this.cooldownMs, now);
  }

  /** A request ended with neither verdict (its client left): a probe's turn goes to the next request. */
  abandoned(): void {
    this.probeOut = false;
  }

  /** Out for `ms` (at least until an earlier opening ends): after the threshold, or an upstream's Retry-After. */
  openFor(ms: number, now: number): void {
    this.openUntil = this.opened && !this.probeOut ? Math.max(this.openUntil, now + ms) : now + ms;
    this.opened = true;
    this.probeOut = false;
    this.windowCalls = 0;
    this.windowFailures = 0;
  }

  private close(): void {
    this.opened = false;
    this.probeOut = false;
    this.consecutiveFailures = 0;
  }

  private count(now: number, failed: boolean): void {
    if (now - this.windowStart >= WINDOW_MS) {
      this.windowStart = now;
      this.windowCalls = 0;
      this.windowFailures = 0;
    }
    this.windowCalls++;
    if (failed) this.windowFailures++;
  }
}
