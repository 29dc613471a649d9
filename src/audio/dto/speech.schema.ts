import type { SchemaObject } from '@nestjs/swagger';
import { SPEECH_CONTENT_TYPES, SPEECH_FORMATS } from '../../config/gateway-config.schema';
import { object, string } from '../../openapi/schemas';
import { MAX_SPEED, MIN_SPEED } from './speech-request.dto';

export const speechBody: SchemaObject = object(
  {
    model: { type: 'string', description: 'A speech model id of GET /v1/models' },
    input: { type: 'string', description: 'At most limits.speech_max_input_chars characters' },
    voice: { type: 'string', description: "One of the model's voices or voice aliases (local-tts: OpenAI's voice names); default: its first voice" },
    response_format: { type: 'string', enum: [...SPEECH_FORMATS] },
    speed: { type: 'number', minimum: MIN_SPEED, maximum: MAX_SPEED },
  },
  ['model', 'input'],
);

/** One media type per speech format, each a binary body. */
export const speechAudio: Record<string, SchemaObject> = Object.fromEntries(Object.values(SPEECH_CONTENT_TYPES).map((type) => [type, string]));
