import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { ErrorCode, GatewayError } from '../errors';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { refuseUnreadBody } from '../common/http/refuse-unread-body';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';

/** Room for the form's boundaries, part headers and text fields beside a file of the maximum size. */
export const FORM_OVERHEAD_BYTES = 64 * 1024;

/**
 * Runs after the entitlement guard and before any byte of the body is read: a body that is not
 * multipart is 400 invalid_upload, and one that declares more than the limit is 413 at once; both
 * close the connection without reading the body.
 */
@Injectable()
export class MultipartRequestGuard implements CanActivate {
  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const req = http.getRequest<GatewayRequest>();
    const contentType = (req.headers['content-type'] ?? '').toLowerCase();
    if (!contentType.startsWith('multipart/form-data')) {
      refuseUnreadBody(req.raw, http.getResponse<GatewayReply>().raw);
      throw new GatewayError(ErrorCode.InvalidUpload, 'Send the audio as multipart/form-data with a "file" field.');
    }
    const declared = Number(req.headers['content-length'] ?? NaN);
    const limit = this.config.limits.transcription_max_bytes;
    if (declared > limit + FORM_OVERHEAD_BYTES) {
      refuseUnreadBody(req.raw, http.getResponse<GatewayReply>().raw);
      throw new GatewayError(ErrorCode.PayloadTooLarge, `The upload exceeds the limit of ${limit} bytes.`);
    }
    return true;
  }
}
