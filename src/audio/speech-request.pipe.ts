import { Inject, Injectable, PipeTransform } from '@nestjs/common';
import { ErrorCode, GatewayError } from '../errors';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { CatalogEntry, GatewayConfig, SPEECH_FORMATS, SpeechFormat } from '../config/gateway-config.schema';
import { CatalogService } from '../models/catalog.service';
import { quotedModel, readRequestedModel } from '../models/requested-model';
import { resolveVoice } from '../models/speech-voice';
import { checkSpeechBody } from './dto/speech.schema';

/** A speech request that passed validation, with its catalog model and every default applied. */
export interface SpeechRequest {
  model: CatalogEntry;
  input: string;
  /** Characters of the input (Unicode code points), as limited and metered. */
  inputChars: number;
  /** The model's own voice (an alias already resolved). */
  voice: string;
  responseFormat: SpeechFormat;
  speed: number;
}

/** The fields as speechBody has checked them (null: the default). */
interface CheckedSpeechFields extends Record<string, unknown> {
  input: string;
  voice?: string | null;
  response_format?: SpeechFormat | null;
  speed?: number | null;
}

/** Which code a failed field check answers (SPEC.md's speech codes). */
const FIELD_CODES: Record<string, ErrorCode> = {
  model: ErrorCode.InvalidRequest,
  input: ErrorCode.InvalidInput,
  voice: ErrorCode.InvalidInput,
  speed: ErrorCode.InvalidInput,
  response_format: ErrorCode.UnsupportedResponseFormat,
};

/** Validates the parsed JSON body of POST /v1/audio/speech, codes in the order of SPEC.md. */
@Injectable()
export class SpeechRequestPipe implements PipeTransform<unknown, SpeechRequest> {
  constructor(
    private readonly catalog: CatalogService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  transform(body: unknown): SpeechRequest {
    const { fields, modelId } = readRequestedModel(body);
    const model = this.catalog.find(modelId);
    if (!model || model.kind !== 'speech') {
      const speechIds = this.catalog.ofKind('speech').map((m) => m.id);
      throw new GatewayError(ErrorCode.UnknownModel, `${quotedModel(modelId)} is not a speech model of the catalog; speech models: ${speechIds.join(', ') || 'none'}.`, 'model');
    }
    if (fields.input === undefined || fields.input === null) {
      throw new GatewayError(ErrorCode.MissingInput, 'You must provide the input text to speak.', 'input');
    }
    const problem = checkSpeechBody(fields);
    if (problem) {
      throw new GatewayError(FIELD_CODES[problem.path] ?? ErrorCode.InvalidRequest, `Invalid ${problem.path}: ${problem.message}.`, problem.path);
    }
    const checked = fields as CheckedSpeechFields;

    const inputChars = [...checked.input].length;
    const maxChars = this.config.limits.speech_max_input_chars;
    if (inputChars > maxChars) {
      throw new GatewayError(ErrorCode.InputTooLong, `input has ${inputChars} characters; the maximum is ${maxChars}.`, 'input');
    }
    const voice = resolveVoice(model, checked.voice);
    const formats = model.response_formats ?? SPEECH_FORMATS;
    // mp3 is the default, as in OpenAI's API, unless the model does not offer it.
    const responseFormat = checked.response_format ?? (formats.includes('mp3') ? 'mp3' : formats[0]);
    if (!formats.includes(responseFormat)) {
      throw new GatewayError(
        ErrorCode.UnsupportedResponseFormat,
        `response_format "${responseFormat}" is not offered by ${model.id}; formats: ${formats.join(', ')}.`,
        'response_format',
      );
    }
    return { model, input: checked.input, inputChars, voice, responseFormat, speed: checked.speed ?? 1 };
  }
}
