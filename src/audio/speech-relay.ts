import { Injectable, Logger } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { secondsSince } from '../common/elapsed';
import { SPEECH_CONTENT_TYPES, SpeechFormat } from '../config/gateway-config.schema';
import { MetricsService } from '../metrics/metrics.service';
import { UpstreamFailure, upstreamGatewayError } from '../providers/upstream-failure';
import { AudioCall } from './audio-call';
import { SPEECH_ENDPOINT, SpeechStream } from './audio.service';

/**
 * Copies speech audio to the client as it arrives, honouring backpressure. The status line waits for the
 * first bytes, so an upstream that fails before sending any audio still gets a proper error response;
 * one that fails later breaks the response, so the client sees it fail.
 */
@Injectable()
export class SpeechRelay {
  private readonly logger = new Logger(SpeechRelay.name);

  constructor(private readonly metrics: MetricsService) {}

  async relay(audio: SpeechStream, format: SpeechFormat, res: ServerResponse, call: AudioCall): Promise<void> {
    try {
      await copy(audio.body, res, SPEECH_CONTENT_TYPES[format], call.signal);
    } catch (err) {
      if (call.signal.aborted) return; // the client left; the usage record says 499
      const failure = err instanceof UpstreamFailure ? err : new UpstreamFailure('bad_response', `The audio stream broke: ${(err as Error).message}`);
      const error = upstreamGatewayError(failure, 'speech');
      if (!res.headersSent) {
        await call.giveBackFairUse();
        throw error;
      }
      call.meter.failed(error.code);
      this.logger.warn({ requestId: call.requestId }, `Speech stream of ${call.requestId} failed: ${error.message}`);
      res.destroy();
    } finally {
      this.metrics.observeUpstream(SPEECH_ENDPOINT, secondsSince(audio.startedAt));
    }
  }
}

async function copy(body: Readable, res: ServerResponse, contentType: string, signal: AbortSignal): Promise<void> {
  for await (const chunk of body) {
    if (!res.headersSent) {
      res.statusCode = 200;
      res.setHeader('Content-Type', contentType);
      res.setHeader('Cache-Control', 'no-store');
    }
    if (!res.write(chunk)) await once(res, 'drain', { signal });
  }
  if (!res.headersSent) throw new UpstreamFailure('bad_response', 'The speech service sent no audio.');
  res.end();
}
