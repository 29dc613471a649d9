import type { SchemaObject } from '@nestjs/swagger';
import { SPEECH_CONTENT_TYPES, SPEECH_FORMATS } from '../../config/gateway-config.schema';
import { compileBody } from '../../common/validation/compiled-body';
import { orNull, string } from '../../openapi/schemas';

export const MIN_SPEED = 0.25;
export const MAX_SPEED = 4;

/**
 * The speech request body: its fields type-checked by SpeechRequestPipe in this order, and what the
 * OpenAPI document shows. Which voices and formats a model offers and how long the input may be are
 * checked against the catalog entry and the limits afterwards; any other field is ignored.
 */
export const speechBody: SchemaObject = {
  type: 'object',
  properties: {
    model: { type: 'string', description: 'A speech model id of GET /v1/models' },
    input: { type: 'string', minLength: 1, description: 'At most limits.speech_max_input_chars characters' },
    voice: orNull({ type: 'string', minLength: 1, description: "One of the model's voices or voice aliases (local-tts: OpenAI's voice names); default: its first voice" }),
    response_format: orNull({ type: 'string', enum: [...SPEECH_FORMATS] }),
    speed: orNull({ type: 'number', minimum: MIN_SPEED, maximum: MAX_SPEED }),
  },
  required: ['model', 'input'],
  additionalProperties: true,
};

export const checkSpeechBody = compileBody(speechBody);

/** One media type per speech format, each a binary body. */
export const speechAudio: Record<string, SchemaObject> = Object.fromEntries(Object.values(SPEECH_CONTENT_TYPES).map((type) => [type, string]));
