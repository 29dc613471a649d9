import { Injectable, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { ErrorCode, GatewayError } from '../common/errors';
import { secondsSince } from '../common/elapsed';
import { abortOnClientClose } from '../common/http/client-abort';
import { GatewayRequest } from '../common/http/gateway-request';
import { SPEECH_CONTENT_TYPES } from '../config/gateway-config.schema';
import { FairUseService } from '../entitlements/fair-use.service';
import { MetricsService } from '../metrics/metrics.service';
import { CatalogService } from '../models/catalog.service';
import { ProviderRegistry } from '../providers/provider-registry';
import { asGatewayError, UpstreamFailure, upstreamGatewayError } from '../providers/upstream-failure';
import { VerboseTranscription } from '../providers/upstream-provider';
import { SpeechRequest } from './speech-request.pipe';
import { TranscriptionRequest } from './transcription-request.pipe';

const TRANSCRIPTION_ENDPOINT = '/v1/audio/transcriptions';
const SPEECH_ENDPOINT = '/v1/audio/speech';

/** Transcription and speech: included features, so nothing here reads or moves credits. */
@Injectable()
export class AudioService {
  private readonly logger = new Logger(AudioService.name);

  constructor(
    private readonly catalog: CatalogService,
    private readonly providers: ProviderRegistry,
    private readonly fairUse: FairUseService,
    private readonly metrics: MetricsService,
  ) {}

  async transcribe(req: GatewayRequest, res: Response, request: TranscriptionRequest): Promise<void> {
    const model = this.catalog.activeTranscriptionModel();
    if (!model) throw new GatewayError(ErrorCode.ConfigError, 'No transcription model is configured.');
    if (req.usage) req.usage.model = model.id;
    const signal = abortOnClientClose(res);
    const startedAt = process.hrtime.bigint();
    let answer: VerboseTranscription;
    try {
      answer = await this.providers.forModel(model).transcribe(
        model,
        { file: request.file, filename: request.filename, mimetype: request.mimetype, language: request.language, prompt: request.prompt, temperature: request.temperature },
        signal,
      );
    } catch (err) {
      await this.fairUse.giveBackFor(req);
      throw asGatewayError(err, 'speech', true);
    } finally {
      this.metrics.observeUpstream(TRANSCRIPTION_ENDPOINT, secondsSince(startedAt));
    }
    const duration = audioDuration(answer);
    if (req.usage) req.usage.audioSeconds = duration;
    if (request.responseFormat === 'text') {
      res.status(200).type('text/plain; charset=utf-8').send(answer.text);
    } else if (request.responseFormat === 'json') {
      res.status(200).json({ text: answer.text });
    } else {
      const verbose: Record<string, unknown> = { language: answer.language ?? request.language ?? 'unknown', duration, text: answer.text };
      if (Array.isArray(answer.segments)) verbose.segments = answer.segments;
      res.status(200).json(verbose);
    }
  }

  async speak(req: GatewayRequest, res: Response, request: SpeechRequest): Promise<void> {
    if (req.usage) {
      req.usage.model = request.model.id;
      req.usage.inputChars = request.inputChars;
      req.usage.streamed = true;
    }
    const signal = abortOnClientClose(res);
    const startedAt = process.hrtime.bigint();
    let body: Readable;
    try {
      const audio = await this.providers
        .forModel(request.model)
        .speech(request.model, { input: request.input, voice: request.voice, response_format: request.responseFormat, speed: request.speed }, signal);
      body = audio.body;
      if (!isAudioType(audio.contentType)) {
        body.once('error', () => undefined); // undici reports its own destroy as an error
        body.destroy();
        throw new UpstreamFailure('bad_response', `The speech service answered with ${audio.contentType || 'no content type'} instead of audio.`);
      }
    } catch (err) {
      this.metrics.observeUpstream(SPEECH_ENDPOINT, secondsSince(startedAt));
      await this.fairUse.giveBackFor(req);
      throw asGatewayError(err, 'speech');
    }
    try {
      await relayAudio(body, res, SPEECH_CONTENT_TYPES[request.responseFormat], signal);
    } catch (err) {
      if (signal.aborted) return; // the client left; the usage record says 499
      const error = upstreamGatewayError(err instanceof UpstreamFailure ? err : new UpstreamFailure('bad_response', `The audio stream broke: ${(err as Error).message}`), 'speech');
      if (!res.headersSent) {
        await this.fairUse.giveBackFor(req);
        throw error;
      }
      // The status line is out: all that is left is to break the response so the client sees it fail.
      if (req.usage) req.usage.errorCode = error.code;
      this.logger.warn({ requestId: req.id }, `Speech stream of ${req.id} failed: ${error.message}`);
      res.destroy();
    } finally {
      this.metrics.observeUpstream(SPEECH_ENDPOINT, secondsSince(startedAt));
    }
  }
}

/**
 * Copies the audio to the client as it arrives, honouring backpressure. The status line waits for the
 * first bytes, so an upstream that fails before sending any audio still gets a proper error response.
 */
async function relayAudio(body: Readable, res: Response, contentType: string, signal: AbortSignal): Promise<void> {
  for await (const chunk of body) {
    if (!res.headersSent) {
      res.status(200);
      res.setHeader('Content-Type', contentType);
      res.setHeader('Cache-Control', 'no-store');
    }
    if (!res.write(chunk)) await once(res, 'drain', { signal });
  }
  if (!res.headersSent) throw new UpstreamFailure('bad_response', 'The speech service sent no audio.');
  res.end();
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
