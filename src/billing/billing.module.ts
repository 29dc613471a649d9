import { Global, Module } from '@nestjs/common';
import { AccountsService } from './accounts.service';
import { BillingService } from './billing.service';
import { HoldSweeper } from './hold-sweeper.service';

@Global()
@Module({ providers: [AccountsService, BillingService, HoldSweeper], exports: [AccountsService, BillingService] })
export class BillingModule {}
