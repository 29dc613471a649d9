import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';
import { BillingService } from './billing.service';

/**
 * Every billing.hold_sweep_interval_s: keeps this process's running holds alive, then releases
 * expired ones (their request died with its process). Every replica runs it; the SQL makes that safe.
 */
@Injectable()
export class HoldSweeper implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(HoldSweeper.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly billing: BillingService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.tick(), this.config.billing.hold_sweep_interval_s * 1000);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One pass; overlapping passes are skipped. */
  tick(): Promise<void> {
    this.running ??= this.sweep().finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweep(): Promise<void> {
    try {
      await this.billing.keepLiveHoldsAlive();
      const released = await this.billing.sweepExpiredHolds();
      if (released > 0) this.logger.warn(`Released ${released} expired chat hold(s) left by a stopped process`);
    } catch (err) {
      this.logger.error({ err }, `Hold sweep failed: ${(err as Error).message}`);
    }
  }
}
