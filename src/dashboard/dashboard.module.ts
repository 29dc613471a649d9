import { Module } from '@nestjs/common';
import { AdminTokenModule } from '../admin-token/admin-token.module';
import { BillingModule } from '../billing/billing.module';
import { UsageModule } from '../usage/usage.module';
import { DashboardOverviewController } from './dashboard-overview.controller';
import { DashboardController } from './dashboard.controller';
import { DashboardService } from './dashboard.service';
import { OverviewService } from './overview.service';

@Module({
  imports: [AdminTokenModule, BillingModule, UsageModule],
  controllers: [DashboardController, DashboardOverviewController],
  providers: [DashboardService, OverviewService],
})
export class DashboardModule {}
