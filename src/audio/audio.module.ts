import { Module } from '@nestjs/common';
import { AudioService } from './audio.service';
import { MultipartRequestGuard } from './multipart-request.guard';
import { SpeechRequestPipe } from './speech-request.pipe';
import { SpeechController } from './speech.controller';
import { TranscriptionRequestPipe } from './transcription-request.pipe';
import { TranscriptionController } from './transcription.controller';
import { TranscriptionUploadInterceptor } from './transcription-upload.interceptor';

@Module({
  controllers: [TranscriptionController, SpeechController],
  providers: [AudioService, SpeechRequestPipe, TranscriptionRequestPipe, MultipartRequestGuard, TranscriptionUploadInterceptor],
})
export class AudioModule {}
