import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { ErrorCode, GatewayError } from '../errors';
import { FORM_OVERHEAD_BYTES } from '../common/http/body-limits';
import { GatewayRequest } from '../common/http/gateway-request';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';

/**
 * Runs after the entitlement guard and before any byte of the body is read: a body that is not
 * multipart is 400 invalid_upload (its body then read and dropped, as for any refusal before the body),
 * and one that declares more than the limit is 413 at once, its connection closed without reading the body
 * (the exception filter decides which: GatewayExceptionFilter.leaveUnreadBody).
 */
@Injectable()
export class MultipartRequestGuard implements CanActivate {
  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<GatewayRequest>();
    const contentType = (req.headers['content-type'] ?? '').toLowerCase();
    if (!contentType.startsWith('multipart/form-data')) {
      throw new GatewayError(ErrorCode.InvalidUpload, 'Send the audio as multipart/form-data with a "file" field.');
    }
    const declared = Number(req.headers['content-length'] ?? NaN);
    const limit = this.config.limits.transcription_max_bytes;
    if (declared > limit + FORM_OVERHEAD_BYTES) {
      throw new GatewayError(ErrorCode.PayloadTooLarge, `The upload exceeds the limit of ${limit} bytes.`);
    }
    return true;
  }
}
