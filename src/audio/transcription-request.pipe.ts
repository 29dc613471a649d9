import { createParamDecorator, ExecutionContext, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { ErrorCode, GatewayError } from '../errors';
import { GatewayRequest } from '../common/http/gateway-request';
import { quotedClientText } from '../models/requested-model';
import { acceptedExtension, detectContainer, SIGNATURE_BYTES, TRANSCRIPTION_EXTENSIONS } from './audio-file-format';
import { STREAMED_RESPONSE_FORMATS, TRANSCRIPTION_RESPONSE_FORMATS, TranscriptionFormDto, TranscriptionResponseFormat } from './dto/transcription-request.dto';

/** The uploaded file, read into memory. */
export interface UploadedFile {
  buffer: Buffer;
  originalname: string;
  mimetype: string;
}

/** The multipart form as TranscriptionUploadInterceptor read it. */
export interface TranscriptionForm {
  file: UploadedFile | undefined;
  fields: unknown;
}

/** Where TranscriptionUploadInterceptor leaves the file on the request (and the text fields as its body). */
export const UPLOADED_FILE = Symbol('uploaded file');

/** A transcription request that passed validation. */
export interface TranscriptionRequest {
  file: Buffer;
  filename: string;
  mimetype: string;
  responseFormat: TranscriptionResponseFormat;
  /** `stream: true`: the text goes out as transcript.text.delta events, then transcript.text.done. */
  stream: boolean;
  /** What the client sent as `model` (ignored for routing). */
  requestedModel?: string;
  language?: string;
  prompt?: string;
  temperature?: string;
}

/** The uploaded file and the form's text fields, read by TranscriptionUploadInterceptor. */
export const TranscriptionUpload = createParamDecorator((_: unknown, context: ExecutionContext): TranscriptionForm => {
  const req = context.switchToHttp().getRequest<GatewayRequest & { [UPLOADED_FILE]?: UploadedFile }>();
  return { file: req[UPLOADED_FILE], fields: req.body };
});

/** DESIGN.md section 5's transcription codes: missing_file, unsupported_file_format, invalid_response_format. */
@Injectable()
export class TranscriptionRequestPipe implements PipeTransform<TranscriptionForm, TranscriptionRequest> {
  transform({ file, fields }: TranscriptionForm): TranscriptionRequest {
    if (!file) throw new GatewayError(ErrorCode.MissingFile, 'You must upload the audio in the "file" field.', 'file');
    const container = detectContainer(file.buffer.subarray(0, SIGNATURE_BYTES));
    if (!acceptedExtension(file.originalname) || !container) {
      throw new GatewayError(
        ErrorCode.UnsupportedFileFormat,
        `Unsupported file "${file.originalname}": the name and the content must be one of ${TRANSCRIPTION_EXTENSIONS.join(', ')}.`,
        'file',
      );
    }
    const form = plainToInstance(TranscriptionFormDto, { ...(fields as object) });
    const [problem] = validateSync(form, { forbidUnknownValues: false });
    if (problem?.property === 'response_format') {
      throw new GatewayError(
        ErrorCode.InvalidResponseFormat,
        `Invalid response_format "${String(problem.value)}"; use one of ${TRANSCRIPTION_RESPONSE_FORMATS.join(', ')}.`,
        'response_format',
      );
    }
    if (problem) throw new GatewayError(ErrorCode.InvalidUpload, `Invalid form field ${problem.property}: send it once, as text.`, problem.property);
    const responseFormat = form.response_format ?? 'json';
    const stream = streamField(form.stream);
    if (stream && !STREAMED_RESPONSE_FORMATS.includes(responseFormat)) {
      throw new GatewayError(
        ErrorCode.InvalidResponseFormat,
        `response_format "${responseFormat}" cannot be streamed; with stream true use ${STREAMED_RESPONSE_FORMATS.join(' or ')}.`,
        'response_format',
      );
    }
    return {
      file: file.buffer,
      filename: file.originalname,
      mimetype: file.mimetype,
      responseFormat,
      stream,
      requestedModel: form.model,
      language: form.language || undefined,
      prompt: form.prompt || undefined,
      temperature: form.temperature || undefined,
    };
  }
}

/** A multipart field is text: OpenAI's SDKs send `true`/`false`, Python's requests `True`/`False`. */
function streamField(value: string | undefined): boolean {
  if (value === undefined) return false;
  const word = value.toLowerCase();
  if (word === 'true' || word === 'false') return word === 'true';
  throw new GatewayError(ErrorCode.InvalidRequest, `Invalid stream ${quotedClientText(value)}: send true or false.`, 'stream');
}
