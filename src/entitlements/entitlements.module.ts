import { Module } from '@nestjs/common';
import { EntitlementGuard } from './entitlement.guard';
import { FairUseService } from './fair-use.service';
import { SubscriptionService } from './subscription.service';

@Module({ providers: [SubscriptionService, FairUseService, EntitlementGuard], exports: [SubscriptionService, FairUseService, EntitlementGuard] })
export class EntitlementsModule {}
