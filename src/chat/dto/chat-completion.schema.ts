import type { SchemaObject } from '@nestjs/swagger';
import { compileBody } from '../../common/validation/compiled-body';
import { orNull } from '../../openapi/schemas';

/** Token counts end in `integer` columns (usage_records) and parameters (billing_reserve's p_max_output). */
export const MAX_TOKENS_LIMIT = 2_147_483_647;
/** Choices per request, as OpenAI's API allows. */
export const MAX_CHOICES = 128;

export const tokenCount: SchemaObject = { type: 'integer', minimum: 1, maximum: MAX_TOKENS_LIMIT };
export const between = (minimum: number, maximum: number): SchemaObject => ({ type: 'number', minimum, maximum });

/**
 * The chat request body: what ChatRequestPipe checks (compiled by ajv, in this order) and what the
 * OpenAPI document shows. The fields the gateway itself relies on (routing, billing, streaming), every
 * message an object with a string role, and the sampling parameters with OpenAI's documented ranges;
 * every other field, and whatever else a message holds, is the upstream's to judge and passes through
 * as sent.
 */
export const chatCompletionBody: SchemaObject = {
  type: 'object',
  properties: {
    model: { type: 'string', description: 'A chat model id of GET /v1/models' },
    messages: {
      type: 'array',
      minItems: 1,
      items: { type: 'object', properties: { role: { type: 'string' }, content: {} }, required: ['role'], additionalProperties: true },
    },
    stream: orNull({ type: 'boolean' }),
    stream_options: orNull({ type: 'object', properties: { include_usage: orNull({ type: 'boolean' }) }, additionalProperties: true }),
    max_tokens: orNull(tokenCount),
    max_completion_tokens: orNull(tokenCount),
    /** Choices per request: the hold covers every one of them. */
    n: orNull({ type: 'integer', minimum: 1, maximum: MAX_CHOICES }),
    temperature: orNull(between(0, 2)),
    top_p: orNull(between(0, 1)),
    presence_penalty: orNull(between(-2, 2)),
    frequency_penalty: orNull(between(-2, 2)),
    logprobs: orNull({ type: 'boolean' }),
    top_logprobs: orNull({ type: 'integer', minimum: 0, maximum: 20 }),
    service_tier: orNull({
      type: 'string',
      description: "OpenAI's processing tier (auto, default, flex, priority, fast…): a tier other than auto or default is served when the model prices it (its answer is billed at that price), else refused with 400 unsupported_parameter",
    }),
    store: orNull({ type: 'boolean', description: 'Sent upstream as false: the gateway keeps nothing, and a tenant\'s conversation is not kept in the operator\'s upstream account (true is named in x-gateway-ignored-params)' }),
    seed: orNull({
      type: 'integer',
      minimum: Number.MIN_SAFE_INTEGER,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'Beyond 2^53 a JSON number is no longer the integer the client wrote, so it could not be passed on as sent',
    }),
  },
  required: ['model', 'messages'],
  additionalProperties: true,
};

export const checkChatCompletionBody = compileBody(chatCompletionBody);
