import { Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { Pool } from 'pg';
import { DATABASE_URL, ENV } from '../config/config.tokens';
import { UsageModule } from '../usage/usage.module';
import { AccountsService } from './accounts.service';
import { BILLING_POOL, createBillingPool } from './billing-pool';
import { BillingRepository } from './billing-repository';
import { BillingService } from './billing.service';
import { HoldSweeper } from './hold-sweeper.service';

@Module({
  imports: [UsageModule],
  providers: [
    AccountsService,
    BillingService,
    BillingRepository,
    HoldSweeper,
    { provide: BILLING_POOL, inject: [DATABASE_URL, ENV], useFactory: createBillingPool },
  ],
  exports: [AccountsService, BillingService],
})
export class BillingModule implements OnApplicationShutdown {
  constructor(
    @Inject(BILLING_POOL) private readonly pool: Pool,
    private readonly billing: BillingService,
    private readonly sweeper: HoldSweeper,
  ) {}

  /** After the HTTP server has closed, so that no request is still placing holds; the leases are renewed until given back. */
  async onApplicationShutdown(): Promise<void> {
    await this.billing.stop();
    await this.sweeper.stop();
    await this.pool.end();
  }
}
