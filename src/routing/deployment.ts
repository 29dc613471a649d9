import type { CatalogEntry } from '../config/gateway-config.schema';
import { CircuitBreaker } from './circuit-breaker';

/** Calls kept for a deployment's recent error rate and latency. */
const RECENT_CALLS = 100;

/** What a usage record says about who served a request. */
export interface ServedBy {
  deployment: string;
  attempts: number;
}

/**
 * One upstream serving one catalog model, with this replica's view of it: requests in flight, its circuit,
 * its counters (read by /metrics) and its last calls (read by GET /admin/v1/upstreams). Updated with plain
 * arithmetic on the hot path: nothing here allocates per request. `U` is what it calls: its provider's
 * interface for the model's kind.
 */
export class Deployment<U = unknown> {
  inFlight = 0;
  requests = 0;
  failures = 0;
  /** Attempts that were a retry of a failed one on another deployment. */
  retries = 0;
  latencySeconds = 0;
  /** The usage record's values when this deployment serves at the first attempt. */
  readonly servedFirst: ServedBy;
  private readonly recentFailed = new Uint8Array(RECENT_CALLS);
  private readonly recentSeconds = new Float64Array(RECENT_CALLS);
  private recentCount = 0;
  private recentNext = 0;

  constructor(
    readonly model: string,
    readonly name: string,
    /** The catalog entry as this deployment's provider sees it: its own provider and upstream_model. */
    readonly entry: CatalogEntry,
    readonly upstream: U,
    readonly weight: number,
    readonly priority: number,
    readonly breaker: CircuitBreaker,
  ) {
    this.servedFirst = { deployment: name, attempts: 1 };
  }

  /** One finished attempt. */
  record(failed: boolean, seconds: number, retry: boolean): void {
    this.requests++;
    if (failed) this.failures++;
    if (retry) this.retries++;
    this.latencySeconds += seconds;
    this.recentFailed[this.recentNext] = failed ? 1 : 0;
    this.recentSeconds[this.recentNext] = seconds;
    this.recentNext = (this.recentNext + 1) % RECENT_CALLS;
    if (this.recentCount < RECENT_CALLS) this.recentCount++;
  }

  /** Failure ratio and mean latency of the last calls (null before any). */
  recent(): { calls: number; errorRate: number | null; latencyMs: number | null } {
    if (this.recentCount === 0) return { calls: 0, errorRate: null, latencyMs: null };
    let failed = 0;
    let seconds = 0;
    for (let i = 0; i < this.recentCount; i++) {
      failed += this.recentFailed[i];
      seconds += this.recentSeconds[i];
    }
    return { calls: this.recentCount, errorRate: failed / this.recentCount, latencyMs: Math.round((seconds / this.recentCount) * 1000) };
  }
}
