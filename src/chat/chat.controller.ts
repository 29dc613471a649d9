import { Body, Controller, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { AccountThrottlerGuard } from '../burst-limit/account-throttler.guard';
import { JsonBodyGuard } from '../common/guards/json-body.guard';
import { GatewayRequest } from '../common/http/gateway-request';
import { ChatRequest, ChatRequestPipe } from './chat-request.pipe';
import { ChatService } from './chat.service';

@Controller('v1/chat')
export class ChatController {
  constructor(private readonly chat: ChatService) {}

  @Post('completions')
  @UseGuards(AccountThrottlerGuard, JsonBodyGuard)
  complete(@Req() req: GatewayRequest, @Res() res: Response, @Body(ChatRequestPipe) request: ChatRequest): Promise<void> {
    return this.chat.complete(req, res, request);
  }
}
