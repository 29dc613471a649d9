import { Body, Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { InvalidBodyCode } from '../common/decorators/invalid-body-code.decorator';
import { JsonBodyGuard } from '../common/guards/json-body.guard';
import { ErrorCode } from '../common/errors';
import { GatewayRequest } from '../common/http/gateway-request';
import { EntitlementGuard, IncludedFeature } from '../entitlements/entitlement.guard';
import { AudioService } from './audio.service';
import { SpeechRequest, SpeechRequestPipe } from './speech-request.pipe';

@Controller('v1/audio')
export class SpeechController {
  constructor(private readonly audio: AudioService) {}

  /** Entitlement and fair use are checked before JsonBodyGuard reads the body. */
  @Post('speech')
  @HttpCode(200)
  @IncludedFeature('speech')
  @UseGuards(EntitlementGuard, JsonBodyGuard)
  @InvalidBodyCode(ErrorCode.InvalidRequest)
  speak(@Req() req: GatewayRequest, @Res() res: Response, @Body(SpeechRequestPipe) request: SpeechRequest): Promise<void> {
    return this.audio.speak(req, res, request);
  }
}
