import { Injectable } from '@nestjs/common';
import { ErrorCode, GatewayError } from '../errors';
import { secondsSince } from '../common/elapsed';
import { MetricsService } from '../metrics/metrics.service';
import { CatalogService } from '../models/catalog.service';
import { asGatewayError, UpstreamFailure } from '../providers/upstream-failure';
import { SpeechAudio, VerboseTranscription } from '../providers/upstream-provider';
import { UpstreamRouter } from '../routing/upstream-router';
import { AudioCall } from './audio-call';
import { SpeechRequest } from './speech-request.pipe';
import { TranscriptionRequest } from './transcription-request.pipe';

const TRANSCRIPTION_ENDPOINT = '/v1/audio/transcriptions';
export const SPEECH_ENDPOINT = '/v1/audio/speech';

/** A transcription with its duration settled: the upstream's, or the end of its last segment. */
export type Transcription = VerboseTranscription & { duration: number };

/** Speech audio as the upstream starts sending it, with when its call started. */
export type SpeechStream = SpeechAudio & { startedAt: bigint };

/** Transcription and speech: included features, so nothing here reads or moves credits. */
@Injectable()
export class AudioService {
  constructor(
    private readonly catalog: CatalogService,
    private readonly upstreams: UpstreamRouter,
    private readonly metrics: MetricsService,
  ) {}

  async transcribe(call: AudioCall, request: TranscriptionRequest): Promise<Transcription> {
    const model = this.catalog.activeTranscriptionModel();
    if (!model) throw new GatewayError(ErrorCode.ConfigError, 'No transcription model is configured.');
    call.meter.describe({ model: model.id, streamed: request.stream });
    const startedAt = process.hrtime.bigint();
    let answer: VerboseTranscription;
    try {
      const { file, filename, mimetype, language, prompt, temperature } = request;
      answer = await this.upstreams.transcribe(model, { file, filename, mimetype, language, prompt, temperature }, call.signal, call.meter);
    } catch (err) {
      await call.giveBackFairUse();
      throw asGatewayError(err, 'speech', true);
    } finally {
      this.metrics.observeUpstream(TRANSCRIPTION_ENDPOINT, secondsSince(startedAt));
    }
    const duration = audioDuration(answer);
    call.meter.describe({ audioSeconds: duration });
    return { ...answer, duration };
  }

  /** The speech audio as the upstream starts sending it; SpeechRelay copies it to the client. */
  async speak(call: AudioCall, request: SpeechRequest): Promise<SpeechStream> {
    call.meter.describe({ model: request.model.id, inputChars: request.inputChars, streamed: true });
    const startedAt = process.hrtime.bigint();
    try {
      const { input, voice, responseFormat, speed } = request;
      const audio = await this.upstreams.speech(request.model, { input, voice, response_format: responseFormat, speed }, call.signal, call.meter);
      if (!isAudioType(audio.contentType)) {
        audio.body.once('error', () => undefined); // undici reports its own destroy as an error
        audio.body.destroy();
        throw new UpstreamFailure('bad_response', `The speech service answered with ${audio.contentType || 'no content type'} instead of audio.`);
      }
      return { ...audio, startedAt };
    } catch (err) {
      this.metrics.observeUpstream(SPEECH_ENDPOINT, secondsSince(startedAt));
      await call.giveBackFairUse();
      throw asGatewayError(err, 'speech');
    }
  }
}

function isAudioType(contentType: string): boolean {
  return /^(audio\/|application\/octet-stream|application\/ogg)/i.test(contentType);
}

/** The upstream's duration; without one, the end of its last segment. */
function audioDuration(answer: VerboseTranscription): number {
  if (typeof answer.duration === 'number' && Number.isFinite(answer.duration) && answer.duration >= 0) return answer.duration;
  const last = Array.isArray(answer.segments) ? (answer.segments.at(-1) as { end?: unknown } | undefined) : undefined;
  return typeof last?.end === 'number' && Number.isFinite(last.end) && last.end >= 0 ? last.end : 0;
}
