import type { SchemaObject } from '@nestjs/swagger';
import { number, object, string } from '../../openapi/schemas';

const block: SchemaObject = object({ type: string }, ['type'], true);

const properties: Record<string, SchemaObject> = {
  model: { type: 'string', description: 'A chat model id of GET /v1/models' },
  messages: { type: 'array', items: object({ role: { type: 'string', enum: ['user', 'assistant'] }, content: { oneOf: [string, { type: 'array', items: block }] } }, ['role', 'content']) },
  system: { oneOf: [string, { type: 'array', items: block }] },
  tools: { type: 'array', items: object({ name: string, description: string, input_schema: { type: 'object' } }, ['name', 'input_schema'], true) },
  tool_choice: object({ type: { type: 'string', enum: ['auto', 'any', 'tool', 'none'] }, name: string, disable_parallel_tool_use: { type: 'boolean' } }, ['type']),
};

/** The documented request body of POST /v1/messages: the fields served (docs/messages.md lists the ones refused or ignored). */
export const createMessageBody: SchemaObject = object(
  {
    ...properties,
    max_tokens: { type: 'integer', minimum: 1 },
    stream: { type: 'boolean' },
    stop_sequences: { type: 'array', items: string },
    temperature: number,
    top_p: number,
    top_k: { type: 'integer', description: 'Accepted, not forwarded (chat completions have no top_k)' },
    metadata: object({ user_id: string }),
  },
  ['model', 'max_tokens', 'messages'],
  true,
);

/** The documented request body of POST /v1/messages/count_tokens. */
export const countTokensBody: SchemaObject = object(properties, ['model', 'messages'], true);

export const countTokensAnswer: SchemaObject = object({ input_tokens: { type: 'integer' } }, ['input_tokens']);
