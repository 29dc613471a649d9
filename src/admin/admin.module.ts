import { Module } from '@nestjs/common';
import { AdminTokenModule } from '../admin-token/admin-token.module';
import { AuditModule } from '../audit/audit.module';
import { BillingModule } from '../billing/billing.module';
import { EntitlementsModule } from '../entitlements/entitlements.module';
import { KeysModule } from '../keys/keys.module';
import { ModelsModule } from '../models/models.module';
import { UsageModule } from '../usage/usage.module';
import { AdminController } from './admin.controller';
import { AdminService } from './admin.service';
import { FirstStartService } from './first-start.service';

@Module({
  imports: [AdminTokenModule, AuditModule, BillingModule, EntitlementsModule, KeysModule, ModelsModule, UsageModule],
  controllers: [AdminController],
  providers: [AdminService, FirstStartService],
})
export class AdminModule {}
