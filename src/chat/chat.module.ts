import { Module } from '@nestjs/common';
import { ChatRequestPipe } from './chat-request.pipe';
import { ChatController } from './chat.controller';
import { ChatService } from './chat.service';

@Module({ controllers: [ChatController], providers: [ChatService, ChatRequestPipe] })
export class ChatModule {}
