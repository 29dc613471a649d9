import { Module } from '@nestjs/common';
import { BillingModule } from '../billing/billing.module';
import { BurstLimitModule } from '../burst-limit/burst-limit.module';
import { MetricsModule } from '../metrics/metrics.module';
import { ModelsModule } from '../models/models.module';
import { RoutingModule } from '../routing/routing.module';
import { ChatRequestPipe } from './chat-request.pipe';
import { ChatController } from './chat.controller';
import { ChatService } from './chat.service';
import { IgnoredParamsReport } from './ignored-params';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { RateLimitsModule } from '../rate-limits/rate-limits.module';

@Module({
  imports: [BillingModule, BurstLimitModule, MetricsModule, ModelsModule, RoutingModule, IdempotencyModule, RateLimitsModule],
  controllers: [ChatController],
  providers: [ChatService, ChatRequestPipe, IgnoredParamsReport],
  // The Responses and Messages APIs are served by the same hold, upstream call and charge, and name what they ignore alike.
  exports: [ChatService, IgnoredParamsReport],
})
export class ChatModule {}
