import type { SchemaObject } from '@nestjs/swagger';
import { between, tokenCount } from '../../chat/dto/chat-completion.schema';
import { compileBody } from '../../common/validation/compiled-body';
import { documentedBody, object, orNull, string } from '../../openapi/schemas';

/**
 * The scalar fields of a Responses request, checked by ResponsesRequestPipe in this order with OpenAI's
 * documented ranges (the same as chat's for the shared ones). Input items, tools and formats are checked
 * while they are translated (responses-input.ts, responses-tools.ts); the fields that need server state
 * are refused before (responses-refusals.ts).
 */
export const responsesCheckedFields: SchemaObject = {
  type: 'object',
  properties: {
    model: { type: 'string', description: 'A chat model id of GET /v1/models' },
    stream: orNull({ type: 'boolean' }),
    instructions: orNull(string),
    max_output_tokens: orNull({ ...tokenCount, description: "Plays the part of chat's max_tokens: the hold covers it" }),
    temperature: orNull(between(0, 2)),
    top_p: orNull(between(0, 1)),
    parallel_tool_calls: orNull({ type: 'boolean' }),
    user: orNull(string),
    metadata: orNull({ type: 'object' }),
    text: orNull({ type: 'object' }),
    reasoning: orNull({ type: 'object' }),
  },
  required: ['model'],
  additionalProperties: true,
};

export const checkResponsesFields = compileBody(responsesCheckedFields);

const TRANSLATED = 'Checked item by item as it is translated into the chat completion (docs/responses.md).';

/** The documented request body: the fields served (docs/responses.md lists the ones refused). */
export const createResponseBody: SchemaObject = documentedBody(
  responsesCheckedFields,
  {
    input: { oneOf: [string, { type: 'array', minItems: 1, items: { type: 'object' } }], description: TRANSLATED },
    tools: { type: 'array', items: object({ type: { type: 'string', enum: ['function'] }, name: string }, ['type', 'name'], true), description: TRANSLATED },
    tool_choice: { description: `auto, none, required or {"type": "function", "name": …}. ${TRANSLATED}` },
    text: { properties: { format: { type: 'object' } }, additionalProperties: true },
    metadata: { maxProperties: 16, additionalProperties: { type: 'string', maxLength: 512 }, description: 'Keys of at most 64 characters' },
  },
  ['input'],
);

/** The fields named in the schema, checked or translated. */
export const RESPONSES_FIELDS = Object.keys(createResponseBody.properties!);
