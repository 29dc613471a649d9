import type { SchemaObject } from '@nestjs/swagger';
import { object, string } from '../../openapi/schemas';
import { TRANSCRIPTION_EXTENSIONS } from '../audio-file-format';
import { TRANSCRIPTION_RESPONSE_FORMATS } from './transcription-request.dto';

export const transcriptionForm: SchemaObject = object(
  {
    file: { type: 'string', format: 'binary', description: `${TRANSCRIPTION_EXTENSIONS.join(', ')}; at most limits.transcription_max_bytes (default 4 MB)` },
    model: { type: 'string', description: 'Accepted and ignored: the active transcription model serves every call' },
    response_format: { type: 'string', enum: [...TRANSCRIPTION_RESPONSE_FORMATS] },
    language: string,
    prompt: string,
    temperature: { type: 'string', description: 'A number, as multipart fields are text' },
  },
  ['file'],
);
