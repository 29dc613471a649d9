/**
 * The burst-limit counter store could not answer: Redis down, hung, restarting, or refusing the hit
 * (a command failed or timed out, or the breaker is open). The only failure AccountThrottlerGuard lets
 * a request through on; anything else thrown while limiting is a fault of ours, answered 500.
 */
export class BurstStoreUnavailable extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = BurstStoreUnavailable.name;
  }
}
