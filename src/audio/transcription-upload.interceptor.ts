import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { Response } from 'express';
import multer, { MulterError } from 'multer';
import type { Writable } from 'node:stream';
import { from, Observable, switchMap } from 'rxjs';
import { ErrorCode, GatewayError } from '../errors';
import { BodyMeter, BodyMeterStop } from '../common/http/body-meter';
import { GatewayRequest } from '../common/http/gateway-request';
import { refuseUnreadBody } from '../common/http/refuse-unread-body';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';
import { FORM_OVERHEAD_BYTES } from './multipart-request.guard';

const MAX_TEXT_FIELDS = 16;
const MAX_TEXT_FIELD_BYTES = 16 * 1024;

// multer's option (since 2.0) that @types/multer does not know yet: what feeds the request body to busboy.
type StreamHandler = (req: GatewayRequest, busboy: Writable) => void;

/**
 * Reads the multipart form with multer once the guards have passed: the file into memory, never more
 * than the limit, and the text fields into req.body. The body passes through a BodyMeter: the moment it
 * grows past the limit (with room for the form around the file), or stalls, the upload is answered
 * (413, 408) and its connection closed. multer alone would read such a body to its end before answering.
 */
@Injectable()
export class TranscriptionUploadInterceptor implements NestInterceptor {
  private readonly limit: number;
  private readonly idleMs: number;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    this.limit = config.limits.transcription_max_bytes;
    this.idleMs = config.limits.body_idle_timeout_ms;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const req = http.getRequest<GatewayRequest>();
    const res = http.getResponse<Response>();
    const read = new Promise<void>((resolve, reject) => {
      // The connection closed (or was closed by an answer to a broken request) while the guards ran:
      // no body will come, and multer would wait for it forever.
      if (req.destroyed) return reject(new GatewayError(ErrorCode.InvalidRequest, 'The connection closed before the upload was read.'));
      const refuse = (reason: BodyMeterStop) => {
        refuseUnreadBody(req, res);
        reject(this.stopError(reason));
      };
      const streamHandler: StreamHandler = (body, busboy) => {
        const meter = new BodyMeter(this.limit + FORM_OVERHEAD_BYTES, this.idleMs, refuse);
        // A client that leaves mid-body: the meter's idle timer goes with it.
        body.once('close', () => body.complete || meter.destroy());
        body.pipe(meter).pipe(busboy);
      };
      const options: multer.Options & { streamHandler: StreamHandler } = {
        storage: multer.memoryStorage(),
        limits: { fileSize: this.limit, files: 1, fields: MAX_TEXT_FIELDS, fieldSize: MAX_TEXT_FIELD_BYTES, parts: MAX_TEXT_FIELDS + 1 },
        streamHandler,
      };
      multer(options).single('file')(req, res, (err: unknown) => (err ? reject(this.uploadError(err)) : resolve()));
    });
    return from(read).pipe(switchMap(() => next.handle()));
  }

  private stopError(reason: BodyMeterStop): GatewayError {
    if (reason === 'too_large') return new GatewayError(ErrorCode.PayloadTooLarge, `The upload exceeds the limit of ${this.limit} bytes.`, 'file');
    return new GatewayError(ErrorCode.RequestTimeout, `No byte of the upload arrived for ${this.idleMs} ms; the connection is closed.`, 'file');
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
