import { Controller, HttpCode, Post, Req, Res, UseGuards, UseInterceptors } from '@nestjs/common';
import { ErrorCode } from '../errors';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { ApiRoute } from '../openapi/api-route.decorator';
import { transcriptionForm } from './dto/transcription.schema';
import { EntitlementGuard, IncludedFeature } from '../entitlements/entitlement.guard';
import { FairUseService } from '../entitlements/fair-use.service';
import { Metered } from '../usage/metered.decorator';
import { UsageMeter } from '../usage/usage-meter';
import { SseWriter } from '../chat/sse';
import { audioCall } from './audio-call';
import { AudioService, Transcription } from './audio.service';
import { MultipartRequestGuard } from './multipart-request.guard';
import { TranscriptionRequest, TranscriptionRequestPipe, TranscriptionUpload } from './transcription-request.pipe';
import { TranscriptionUploadInterceptor } from './transcription-upload.interceptor';
import { streamTranscript } from './transcript-events';

@Controller('v1/audio')
export class TranscriptionController {
  constructor(
    private readonly audio: AudioService,
    private readonly fairUse: FairUseService,
  ) {}

  /** Entitlement and fair use first, then the content type, and only then is the upload read. */
  @Post('transcriptions')
  @HttpCode(200)
  @IncludedFeature('transcription')
  @UseGuards(EntitlementGuard, MultipartRequestGuard)
  @UseInterceptors(TranscriptionUploadInterceptor)
  @ApiRoute({
    tag: 'v1',
    summary: 'Transcription by the active speech-to-text model (included in subscription and trial), optionally streamed as server-sent events',
    auth: 'api_key',
    errors: [
      ErrorCode.InvalidRequest, ErrorCode.InvalidUpload, ErrorCode.MissingFile, ErrorCode.UnsupportedFileFormat, ErrorCode.InvalidResponseFormat,
      ErrorCode.UpstreamRejected, ErrorCode.SubscriptionRequired, ErrorCode.FairUseLimitReached, ErrorCode.NotFound,
      ErrorCode.PayloadTooLarge, ErrorCode.RequestTimeout, ErrorCode.UpstreamError, ErrorCode.UpstreamUnavailable, ErrorCode.UpstreamTimeout,
    ],
    body: { contentType: 'multipart/form-data', schema: transcriptionForm },
    success: {
      status: 200,
      description:
        'json: {text}; text: the transcript; verbose_json: language, duration, text, segments; stream true (json or text): ' +
        'transcript.text.delta events, one per word, then transcript.text.done with the whole text',
      content: { 'application/json': { type: 'object' }, 'text/plain': { type: 'string' }, 'text/event-stream': { type: 'string' } },
    },
  })
  async transcribe(
    @Req() req: GatewayRequest,
    @Res() res: GatewayReply,
    @Metered() meter: UsageMeter,
    @TranscriptionUpload(TranscriptionRequestPipe) request: TranscriptionRequest,
  ): Promise<void> {
    const transcription = await this.audio.transcribe(audioCall(req, res.raw, meter, this.fairUse), request);
    if (request.stream) return streamTranscript(new SseWriter(res.raw), transcription.text);
    if (request.responseFormat === 'text') res.code(200).type('text/plain; charset=utf-8').send(transcription.text);
    else res.code(200).send(request.responseFormat === 'json' ? { text: transcription.text } : verbose(transcription, request.language));
  }
}

/** OpenAI's verbose_json: the language (as detected, else as asked), the duration, the text and any segments. */
function verbose(transcription: Transcription, language: string | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = { language: transcription.language ?? language ?? 'unknown', duration: transcription.duration, text: transcription.text };
  if (Array.isArray(transcription.segments)) body.segments = transcription.segments;
  return body;
}
