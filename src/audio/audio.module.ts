import { Module } from '@nestjs/common';
import { EntitlementsModule } from '../entitlements/entitlements.module';
import { MetricsModule } from '../metrics/metrics.module';
import { ModelsModule } from '../models/models.module';
import { RoutingModule } from '../routing/routing.module';
import { AudioService } from './audio.service';
import { MultipartRequestGuard } from './multipart-request.guard';
import { SpeechRequestPipe } from './speech-request.pipe';
import { SpeechController } from './speech.controller';
import { SpeechRelay } from './speech-relay';
import { TranscriptionRequestPipe } from './transcription-request.pipe';
import { TranscriptionController } from './transcription.controller';
import { TranscriptionUploadInterceptor } from './transcription-upload.interceptor';
import { IdempotencyModule } from '../idempotency/idempotency.module';

@Module({
  imports: [EntitlementsModule, MetricsModule, ModelsModule, RoutingModule, IdempotencyModule],
  controllers: [TranscriptionController, SpeechController],
  providers: [AudioService, SpeechRelay, SpeechRequestPipe, TranscriptionRequestPipe, MultipartRequestGuard, TranscriptionUploadInterceptor],
})
export class AudioModule {}
