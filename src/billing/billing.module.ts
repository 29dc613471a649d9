import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { Pool } from 'pg';
import { DATABASE_URL, ENV } from '../config/config.tokens';
import { AccountsService } from './accounts.service';
import { BILLING_POOL, createBillingPool } from './billing-pool';
import { BillingService } from './billing.service';
import { HoldSweeper } from './hold-sweeper.service';

@Global()
@Module({
  providers: [
    AccountsService,
    BillingService,
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
