import { Module } from '@nestjs/common';
import { BurstLimitModule } from '../burst-limit/burst-limit.module';
import { ChatModule } from '../chat/chat.module';
import { ModelsModule } from '../models/models.module';
import { ResponsesRequestPipe } from './responses-request.pipe';
import { ResponsesController } from './responses.controller';
import { IdempotencyModule } from '../idempotency/idempotency.module';

/** POST /v1/responses over chat: ChatService holds, calls the upstream and charges; the pipe and the answer translate. */
@Module({
  imports: [ChatModule, BurstLimitModule, ModelsModule, IdempotencyModule],
  controllers: [ResponsesController],
  providers: [ResponsesRequestPipe],
})
export class ResponsesModule {}
