import { Body, Controller, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import { InvalidBodyCode } from '../common/decorators/invalid-body-code.decorator';
import { JsonBodyGuard } from '../common/guards/json-body.guard';
import { ErrorCode } from '../errors';
import { assertModelAllowed } from '../keys/allowed-model';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { ApiRoute } from '../openapi/api-route.decorator';
import { speechAudio, speechBody } from './dto/speech.schema';
import { EntitlementGuard, IncludedFeature } from '../entitlements/entitlement.guard';
import { FairUseService } from '../entitlements/fair-use.service';
import { Metered } from '../usage/metered.decorator';
import { UsageMeter } from '../usage/usage-meter';
import { audioCall } from './audio-call';
import { AudioService } from './audio.service';
import { SpeechRelay } from './speech-relay';
import { SpeechRequest, SpeechRequestPipe } from './speech-request.pipe';
import { Idempotent } from '../idempotency/idempotent.decorator';

@Controller('v1/audio')
export class SpeechController {
  constructor(
    private readonly audio: AudioService,
    private readonly relay: SpeechRelay,
    private readonly fairUse: FairUseService,
  ) {}

  /** Entitlement and fair use are checked before JsonBodyGuard reads the body. */
  @Post('speech')
  @Idempotent('/v1/audio/speech')
  @HttpCode(200)
  @IncludedFeature('speech')
  @UseGuards(EntitlementGuard, JsonBodyGuard)
  @InvalidBodyCode(ErrorCode.InvalidRequest)
  @ApiRoute({
    tag: 'v1',
    summary: 'Speech synthesis (included in subscription and trial); the audio is streamed as it is produced',
    auth: 'api_key',
    errors: [
      ErrorCode.InvalidRequest, ErrorCode.MissingModel, ErrorCode.MissingInput, ErrorCode.InvalidInput, ErrorCode.UnknownModel,
      ErrorCode.ModelNotAllowed,
      ErrorCode.InputTooLong, ErrorCode.UnsupportedResponseFormat, ErrorCode.UpstreamRejected, ErrorCode.SubscriptionRequired,
      ErrorCode.FairUseLimitReached, ErrorCode.NotFound, ErrorCode.PayloadTooLarge, ErrorCode.UpstreamError,
      ErrorCode.UpstreamUnavailable, ErrorCode.IdempotencyKeyReused, ErrorCode.IdempotencyInProgress,
    ],
    body: { contentType: 'application/json', schema: speechBody },
    success: { status: 200, description: 'The audio in the requested format', content: speechAudio },
  })
  async speak(@Req() req: GatewayRequest, @Res() res: GatewayReply, @Metered() meter: UsageMeter, @Body(SpeechRequestPipe) request: SpeechRequest): Promise<void> {
    assertModelAllowed(req.auth, request.model.id);
    const call = audioCall(req, res.raw, meter, this.fairUse);
    await this.relay.relay(await this.audio.speak(call, request), request.responseFormat, res.raw, call);
  }
}
