import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { RequestHandler, Response } from 'express';
import multer, { MulterError } from 'multer';
import { from, Observable, switchMap } from 'rxjs';
import { ErrorCode, GatewayError } from '../common/errors';
import { GatewayRequest } from '../common/http/gateway-request';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';

const MAX_TEXT_FIELDS = 16;
const MAX_TEXT_FIELD_BYTES = 16 * 1024;

/**
 * Reads the multipart form with multer once the guards have passed: the file into memory, never more
 * than the limit (a larger file stops the upload with 413), and the text fields into req.body.
 */
@Injectable()
export class TranscriptionUploadInterceptor implements NestInterceptor {
  private readonly upload: RequestHandler;
  private readonly limit: number;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    this.limit = config.limits.transcription_max_bytes;
    this.upload = multer({
      storage: multer.memoryStorage(),
      limits: { fileSize: this.limit, files: 1, fields: MAX_TEXT_FIELDS, fieldSize: MAX_TEXT_FIELD_BYTES, parts: MAX_TEXT_FIELDS + 1 },
    }).single('file');
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const req = http.getRequest<GatewayRequest>();
    const res = http.getResponse<Response>();
    const read = new Promise<void>((resolve, reject) => {
      this.upload(req, res, (err: unknown) => (err ? reject(this.uploadError(err)) : resolve()));
    });
    return from(read).pipe(switchMap(() => next.handle()));
  }

  private uploadError(err: unknown): GatewayError {
    if (err instanceof MulterError) {
      if (err.code === 'LIMIT_FILE_SIZE') return new GatewayError(ErrorCode.PayloadTooLarge, `The file exceeds the limit of ${this.limit} bytes.`, 'file');
      if (err.code === 'LIMIT_UNEXPECTED_FILE') {
        return new GatewayError(ErrorCode.InvalidUpload, `Unexpected file field "${err.field ?? ''}": send exactly one file, in the "file" field.`, err.field ?? null);
      }
      return new GatewayError(ErrorCode.InvalidUpload, `The multipart form was refused: ${err.message}.`, err.field ?? null);
    }
    // busboy's parse errors: no boundary, malformed part headers, a form that ends early.
    return new GatewayError(ErrorCode.InvalidUpload, `The multipart form could not be parsed: ${(err as Error).message}.`);
  }
}
