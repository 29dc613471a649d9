import type { SchemaObject } from '@nestjs/swagger';
import { number, object, string } from '../../openapi/schemas';

/** The documented request body: the fields served (docs/responses.md lists the ones refused). */
export const createResponseBody: SchemaObject = object(
  {
    model: { type: 'string', description: 'A chat model id of GET /v1/models' },
    input: { oneOf: [string, { type: 'array', items: { type: 'object' } }] },
    instructions: string,
    stream: { type: 'boolean' },
    max_output_tokens: { type: 'integer' },
    temperature: number,
    top_p: number,
    tools: { type: 'array', items: object({ type: { type: 'string', enum: ['function'] }, name: string }, ['type', 'name'], true) },
    tool_choice: {},
    parallel_tool_calls: { type: 'boolean' },
    text: object({ format: { type: 'object' } }, [], true),
    metadata: { type: 'object', additionalProperties: string },
    user: string,
  },
  ['model', 'input'],
  true,
);
