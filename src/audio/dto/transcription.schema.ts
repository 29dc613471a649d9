import type { SchemaObject } from '@nestjs/swagger';
import { object, string } from '../../openapi/schemas';
import { TRANSCRIPTION_EXTENSIONS } from '../audio-file-format';
import { TRANSCRIPTION_RESPONSE_FORMATS } from './transcription-request.dto';

export const transcriptionForm: SchemaObject = object(
  {
    file: { type: 'string', format: 'binary', description: `${TRANSCRIPTION_EXTENSIONS.join(', ')}; at most limits.transcription_max_bytes (default 4 MB)` },
    model: { type: 'string', description: 'Accepted and ignored: the active transcription model serves every call (usage records an alias of it as sent)' },
    response_format: { type: 'string', enum: [...TRANSCRIPTION_RESPONSE_FORMATS] },
    language: string,
    prompt: string,
    temperature: { type: 'string', description: 'A number, as multipart fields are text' },
    stream: {
      type: 'string',
      description: 'true or false (any case): true sends the text as server-sent events (transcript.text.delta per word, then transcript.text.done); json and text formats only',
    },
  },
  ['file'],
);
