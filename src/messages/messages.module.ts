import { Module } from '@nestjs/common';
import { BurstLimitModule } from '../burst-limit/burst-limit.module';
import { ChatModule } from '../chat/chat.module';
import { MetricsModule } from '../metrics/metrics.module';
import { ModelsModule } from '../models/models.module';
import { RoutingModule } from '../routing/routing.module';
import { MalformedToolArguments } from './malformed-tool-arguments';
import { CountTokensRequestPipe, MessagesRequestPipe } from './messages-request.pipe';
import { MessagesController } from './messages.controller';
import { IdempotencyModule } from '../idempotency/idempotency.module';

/**
 * POST /v1/messages over chat: ChatService holds, calls the upstream and charges; the pipes and the event stream
 * translate, or pass Anthropic's own body and events through for an `anthropic` upstream (count_tokens asks it, through the router).
 */
@Module({
  imports: [ChatModule, BurstLimitModule, ModelsModule, MetricsModule, RoutingModule, IdempotencyModule],
  controllers: [MessagesController],
  providers: [MessagesRequestPipe, CountTokensRequestPipe, MalformedToolArguments],
})
export class MessagesModule {}
