import { Controller, HttpCode, Post, Req, Res, UseGuards, UseInterceptors } from '@nestjs/common';
import type { Response } from 'express';
import { GatewayRequest } from '../common/http/gateway-request';
import { EntitlementGuard, IncludedFeature } from '../entitlements/entitlement.guard';
import { AudioService } from './audio.service';
import { MultipartRequestGuard } from './multipart-request.guard';
import { TranscriptionRequest, TranscriptionRequestPipe, TranscriptionUpload } from './transcription-request.pipe';
import { TranscriptionUploadInterceptor } from './transcription-upload.interceptor';

@Controller('v1/audio')
export class TranscriptionController {
  constructor(private readonly audio: AudioService) {}

  /** Entitlement and fair use first, then the content type, and only then is the upload read. */
  @Post('transcriptions')
  @HttpCode(200)
  @IncludedFeature('transcription')
  @UseGuards(EntitlementGuard, MultipartRequestGuard)
  @UseInterceptors(TranscriptionUploadInterceptor)
  transcribe(@Req() req: GatewayRequest, @Res() res: Response, @TranscriptionUpload(TranscriptionRequestPipe) request: TranscriptionRequest): Promise<void> {
    return this.audio.transcribe(req, res, request);
  }
}
