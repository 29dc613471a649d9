import { Module } from '@nestjs/common';
import { AdminTokenModule } from '../admin-token/admin-token.module';
import { BillingModule } from '../billing/billing.module';
import { UsageModule } from '../usage/usage.module';
import { DashboardController } from './dashboard.controller';
import { DashboardService } from './dashboard.service';

@Module({ imports: [AdminTokenModule, BillingModule, UsageModule], controllers: [DashboardController], providers: [DashboardService] })
export class DashboardModule {}
