import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { Multipart } from '@fastify/multipart';
import { from, Observable, switchMap } from 'rxjs';
import { ErrorCode, GatewayError } from '../errors';
import { FORM_OVERHEAD_BYTES } from '../common/http/body-limits';
import { BodyWatch, BodyWatchStop } from '../common/http/body-watch';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { refuseUnreadBody } from '../common/http/refuse-unread-body';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';
import { TranscriptionForm, UPLOADED_FILE, UploadedFile } from './transcription-request.pipe';

const MAX_TEXT_FIELDS = 16;
const MAX_TEXT_FIELD_BYTES = 16 * 1024;

/**
 * Reads the multipart form with @fastify/multipart once the guards have passed: the file into memory,
 * never more than the limit, and the text fields. The body is watched as it arrives: the moment it grows
 * past the limit (with room for the form around the file), the file passes the limit, or the body
 * stalls, the upload is answered (413, 408) and its connection closed, without reading the rest.
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
    const reply = http.getResponse<GatewayReply>();
    return from(this.read(req, reply)).pipe(switchMap(() => next.handle()));
  }

  private read(req: GatewayRequest & { [UPLOADED_FILE]?: UploadedFile }, reply: GatewayReply): Promise<void> {
    // The connection closed (or was closed by an answer to a broken request) while the guards ran: no body will come.
    if (req.raw.destroyed) return Promise.reject(new GatewayError(ErrorCode.InvalidRequest, 'The connection closed before the upload was read.'));
    return new Promise<void>((resolve, reject) => {
      let watch: BodyWatch | undefined;
      const refuse = (reason: BodyWatchStop) => {
        watch?.end();
        refuseUnreadBody(req.raw, reply.raw);
        reject(this.stopError(reason));
      };
      // The form's reader is piped to the body first (synchronously), then the watch listens beside it.
      const form = this.readForm(req, () => refuse('too_large'));
      watch = new BodyWatch(req.raw, this.limit + FORM_OVERHEAD_BYTES, this.idleMs, refuse);
      form.then(
        (read) => {
          watch?.end();
          // As multer left them: the text fields as the body (the usage record reads the model asked for there).
          req.body = read.fields;
          req[UPLOADED_FILE] = read.file;
          resolve();
        },
        (err: unknown) => {
          watch?.end();
          reject(this.uploadError(err));
        },
      );
    });
  }

  private async readForm(req: GatewayRequest, fileTooLarge: () => void): Promise<TranscriptionForm> {
    const fields: Record<string, unknown> = {};
    let file: UploadedFile | undefined;
    let read = 0;
    const parts = req.parts({ limits: { fileSize: this.limit, files: 1, fields: MAX_TEXT_FIELDS, fieldSize: MAX_TEXT_FIELD_BYTES, parts: MAX_TEXT_FIELDS + 1 } });
    for await (const part of parts as AsyncIterableIterator<Multipart>) {
      read += 1;
      if (part.type === 'file') {
        if (part.fieldname !== 'file') {
          throw new GatewayError(ErrorCode.InvalidUpload, `Unexpected file field "${part.fieldname}": send exactly one file, in the "file" field.`, part.fieldname);
        }
        // As the file passes the limit, not when the client has finished sending it.
        part.file.once('limit', fileTooLarge);
        file = { buffer: await part.toBuffer(), originalname: part.filename, mimetype: part.mimetype };
        continue;
      }
      if (part.fieldnameTruncated || part.valueTruncated) {
        throw new GatewayError(ErrorCode.InvalidUpload, `The multipart form was refused: the field "${part.fieldname}" is longer than ${MAX_TEXT_FIELD_BYTES} bytes.`, part.fieldname);
      }
      // Sent twice: both values, which the form's validation refuses.
      const earlier = fields[part.fieldname];
      fields[part.fieldname] = earlier === undefined ? part.value : [earlier, part.value].flat();
    }
    // busboy passes over a part without a name (no Content-Disposition, a malformed header line): a form of
    // nothing but such parts is not an upload at all.
    if (read === 0) throw new GatewayError(ErrorCode.InvalidUpload, 'The multipart form holds no part with a name: each needs a Content-Disposition header.');
    return { file, fields };
  }

  private stopError(reason: BodyWatchStop): GatewayError {
    if (reason === 'too_large') return new GatewayError(ErrorCode.PayloadTooLarge, `The upload exceeds the limit of ${this.limit} bytes.`, 'file');
    return new GatewayError(ErrorCode.RequestTimeout, `No byte of the upload arrived for ${this.idleMs} ms; the connection is closed.`, 'file');
  }

  private uploadError(err: unknown): GatewayError {
    if (err instanceof GatewayError) return err;
    const code = (err as { code?: unknown }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') return new GatewayError(ErrorCode.PayloadTooLarge, `The file exceeds the limit of ${this.limit} bytes.`, 'file');
    if (typeof code === 'string' && code.startsWith('FST_')) {
      // The limits of the form (one file, 16 fields), a field named after a prototype property, a form cut short.
      return new GatewayError(ErrorCode.InvalidUpload, `The multipart form was refused: ${(err as Error).message}.`);
    }
    // busboy's parse errors: no boundary, malformed part headers, a form that ends early.
    return new GatewayError(ErrorCode.InvalidUpload, `The multipart form could not be parsed: ${(err as Error).message}.`);
  }
}
