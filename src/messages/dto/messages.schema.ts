import type { SchemaObject } from '@nestjs/swagger';
import { between, MAX_TOKENS_LIMIT, tokenCount } from '../../chat/dto/chat-completion.schema';
import { compileBody } from '../../common/validation/compiled-body';
import { documentedBody, object, orNull, string } from '../../openapi/schemas';

/**
 * The scalar fields of a Messages request, checked by MessagesRequestPipe in this order with Anthropic's
 * documented ranges. Messages, system blocks, tools and metadata are checked while they are translated
 * (providers/anthropic/messages-to-chat.ts, messages-tools.ts); the fields that need Anthropic's own platform are refused
 * before, and the ones chat has no place for are named as ignored (messages-fields.ts).
 */
export const messagesCheckedFields: SchemaObject = {
  type: 'object',
  properties: {
    model: { type: 'string', description: 'A chat model id of GET /v1/models' },
    max_tokens: { ...tokenCount, description: "Required by Anthropic's API: the hold covers it" },
    stream: orNull({ type: 'boolean' }),
    temperature: orNull(between(0, 1)),
    top_p: orNull(between(0, 1)),
    top_k: orNull({ type: 'integer', minimum: 0, maximum: MAX_TOKENS_LIMIT, description: 'Accepted, not forwarded (chat completions have no top_k)' }),
  },
  required: ['model', 'max_tokens'],
  additionalProperties: true,
};

/** count_tokens takes the same body without max_tokens (and nothing is generated, so no sampling fields matter). */
export const countTokensCheckedFields: SchemaObject = {
  type: 'object',
  properties: { model: messagesCheckedFields.properties!.model },
  required: ['model'],
  additionalProperties: true,
};

export const checkMessagesFields = compileBody(messagesCheckedFields);
export const checkCountTokensFields = compileBody(countTokensCheckedFields);

/** Anthropic's own error for a missing max_tokens names the field: so does ours (before the schema's generic wording). */
export const MAX_TOKENS_REQUIRED = 'max_tokens is required: the most tokens the answer may have (an integer of at least 1).';

const TRANSLATED = 'Checked part by part as it is translated into the chat completion (docs/messages.md).';
const block: SchemaObject = object({ type: string }, ['type'], true);

/** What the conversation is made of, translated part by part (both routes). */
const conversation: Record<string, SchemaObject> = {
  messages: {
    type: 'array',
    items: object({ role: { type: 'string', enum: ['user', 'assistant', 'system'] }, content: { oneOf: [string, { type: 'array', items: block }] } }, ['role', 'content']),
    description: TRANSLATED,
  },
  system: { oneOf: [string, { type: 'array', items: block }] },
  tools: { type: 'array', items: object({ name: string, description: string, input_schema: { type: 'object' } }, ['name', 'input_schema'], true) },
  tool_choice: object({ type: { type: 'string', enum: ['auto', 'any', 'tool', 'none'] }, name: string, disable_parallel_tool_use: { type: 'boolean' } }, ['type']),
};

/** The documented request body of POST /v1/messages: the fields served (docs/messages.md lists the ones refused or ignored). */
export const createMessageBody: SchemaObject = documentedBody(
  messagesCheckedFields,
  { ...conversation, stop_sequences: { type: 'array', items: string }, metadata: object({ user_id: string }) },
  ['messages'],
);

/** The documented request body of POST /v1/messages/count_tokens. */
export const countTokensBody: SchemaObject = documentedBody(countTokensCheckedFields, conversation, ['messages']);

/** The fields of a message request, checked or translated. */
export const MESSAGES_FIELDS = Object.keys(createMessageBody.properties!);

export const countTokensAnswer: SchemaObject = object({ input_tokens: { type: 'integer' } }, ['input_tokens']);
