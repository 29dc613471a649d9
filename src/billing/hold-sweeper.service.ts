import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';
import { isDatabaseUnavailable } from '../common/database/database-unavailable';
import { BillingService } from './billing.service';

/**
 * Every billing.hold_sweep_interval_s: renews this process's budget leases (the heartbeat), then
 * releases expired holds (their replica died). Every replica runs it; the SQL makes that safe.
 *
 * A replica sweeps only once it has reached the database at every pass for a whole lease lifetime
 * (billing.lease_ttl_s): after an outage, every live replica that reaches the database again has had
 * that long to renew its leases before anyone may take them. docs/billing.md, "Hold sweeper".
 */
@Injectable()
export class HoldSweeper implements OnApplicationBootstrap {
  private readonly logger = new Logger(HoldSweeper.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** No sweep before then: a lease lifetime after this process started or last failed to reach the database. */
  private sweepsFrom = Number.POSITIVE_INFINITY;
  /** The last pass failed (logged once per outage). */
  private failing = false;

  constructor(
    private readonly billing: BillingService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  private get leaseTtlMs(): number {
    return this.config.billing.lease_ttl_s * 1000;
  }

  onApplicationBootstrap(): void {
    this.sweepsFrom = Date.now() + this.leaseTtlMs;
    this.timer = setInterval(() => this.tick(), this.config.billing.hold_sweep_interval_s * 1000);
    this.timer.unref();
  }

  /**
   * Stops the heartbeat and the sweeps. Called once the leases have been given back at shutdown
   * (BillingModule), not before: requests still running during a graceful stop keep their leases.
   */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One pass; overlapping passes are skipped. */
  tick(): Promise<void> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<void> {
    try {
      await this.billing.keepLiveHoldsAlive();
    } catch (err) {
      return this.unreachable(err as Error);
    }
    if (this.failing) {
      this.failing = false;
      this.logger.log(`Database reached again: budget leases renewed; expired holds are swept from ${new Date(this.sweepsFrom).toISOString()}`);
    }
    if (Date.now() < this.sweepsFrom) return;
    try {
      const released = await this.billing.sweepExpiredHolds();
      if (released > 0) this.logger.warn(`Released ${released} expired hold(s) left by a stopped replica`);
    } catch (err) {
      this.unreachable(err as Error);
    }
  }

  /** Leases stay as they are (they are not lost: another replica waits a lifetime before sweeping). */
  private unreachable(err: Error): void {
    this.sweepsFrom = Date.now() + this.leaseTtlMs;
    if (this.failing) return;
    this.failing = true;
    if (isDatabaseUnavailable(err)) this.logger.warn(`Budget lease renewal or hold sweep failed (database unavailable), retrying every pass: ${err.message}`);
    else this.logger.error({ err }, `Budget lease renewal or hold sweep failed, retrying every pass: ${err.message}`);
  }
}
