import type { SchemaObject } from '@nestjs/swagger';
import { number, object, string } from '../../openapi/schemas';

/** The documented request body: the fields the gateway relies on; any other field goes to the upstream as sent. */
export const chatCompletionBody: SchemaObject = object(
  {
    model: { type: 'string', description: 'A chat model id of GET /v1/models' },
    messages: { type: 'array', items: object({ role: string, content: {} }, ['role'], true) },
    stream: { type: 'boolean' },
    stream_options: object({ include_usage: { type: 'boolean' } }),
    max_tokens: { type: 'integer' },
    max_completion_tokens: { type: 'integer' },
    temperature: number,
  },
  ['model', 'messages'],
  true,
);
