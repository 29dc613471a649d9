import { Module } from '@nestjs/common';
import { BurstLimitModule } from '../burst-limit/burst-limit.module';
import { ChatModule } from '../chat/chat.module';
import { ModelsModule } from '../models/models.module';
import { CountTokensRequestPipe, MessagesRequestPipe } from './messages-request.pipe';
import { MessagesController } from './messages.controller';

/** POST /v1/messages over chat: ChatService holds, calls the upstream and charges; the pipes and the event stream translate. */
@Module({
  imports: [ChatModule, BurstLimitModule, ModelsModule],
  controllers: [MessagesController],
  providers: [MessagesRequestPipe, CountTokensRequestPipe],
})
export class MessagesModule {}
