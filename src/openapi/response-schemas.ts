import type { SchemaObject } from '@nestjs/swagger';
import { number, object, string } from './schemas';

export { jsonAnswer } from './schemas';

/** Schemas of the answers that are built by services rather than returned as DTO classes. */

export const usagePeriodDescriptions = {
  from: 'Start, inclusive (YYYY-MM-DD, or an RFC 3339 timestamp with Z or ±HH:MM); default: the start of this UTC month',
  to: 'End, exclusive (same format); a date-only value covers that whole UTC day; default: now',
};

const integer: SchemaObject = { type: 'integer' };
const boolean: SchemaObject = { type: 'boolean' };
const nullableString: SchemaObject = { type: 'string', nullable: true };
const listOf = (items: SchemaObject): SchemaObject => ({ type: 'array', items });

/** The token classes (DESIGN.md section 10): each a part of prompt_tokens or completion_tokens, priced on its own. */
const tokenClasses: Record<string, SchemaObject> = {
  cached_tokens: { type: 'integer', description: 'Part of prompt_tokens read from the prompt cache (cached_input_price_per_million)' },
  cache_write_tokens: { type: 'integer', description: 'Part of prompt_tokens written to the prompt cache, for 5 minutes or an hour (cache_write_price_per_million)' },
  cache_write_1h_tokens: { type: 'integer', description: 'Part of cache_write_tokens written to the prompt cache for an hour (cache_write_1h_price_per_million)' },
  reasoning_tokens: { type: 'integer', description: 'Part of completion_tokens spent reasoning (billed as output)' },
  audio_input_tokens: { type: 'integer', description: 'Part of prompt_tokens that is audio (audio_input_price_per_million)' },
  audio_output_tokens: { type: 'integer', description: 'Part of completion_tokens that is audio (audio_output_price_per_million)' },
};

/** What a group of requests used and cost: chat tokens (with their classes), audio seconds, speech characters. */
const usageTotals: Record<string, SchemaObject> = {
  requests: integer,
  prompt_tokens: integer,
  completion_tokens: integer,
  ...tokenClasses,
  audio_seconds: number,
  input_chars: integer,
  cost_usd: string,
};

/** The server tools the upstream ran (DESIGN.md section 12.2), by tool: their uses and fees. */
const toolUses: SchemaObject = {
  type: 'object',
  description: 'Server tools the upstream ran, by tool (web_search): uses, and their fees in USD (part of cost_usd)',
  additionalProperties: object({ uses: integer, cost_usd: string }),
};

/** One request of the usage view (the latest requests, and the dashboard's pages of them). */
export const usageRequest = object({
  request_id: string,
  key_id: string,
  model: nullableString,
  endpoint: string,
  status: integer,
  error_code: nullableString,
  prompt_tokens: integer,
  completion_tokens: integer,
  ...tokenClasses,
  audio_seconds: number,
  input_chars: integer,
  cost_usd: string,
  latency_ms: integer,
  streamed: boolean,
  price_variants: {
    ...listOf({ type: 'object', description: "A catalog price variant's `when` (service_tier, speed, inference_geo, prompt_tokens_over)" }),
    description: 'The price variants the charge applied, in catalog order; empty: the flat prices',
  },
  tool_uses: toolUses,
  created_at: string,
});

const usageSummaryProperties: Record<string, SchemaObject> = {
  from: string,
  to: string,
  totals: object({ ...usageTotals, tool_uses: toolUses }),
  by_key: listOf(
    object({
      key_id: string,
      key_name: nullableString,
      key_prefix: string,
      revoked_at: nullableString,
      ...usageTotals,
      monthly_limit_usd: { type: 'string', nullable: true, description: "The key's monthly limit (USD), null: none" },
      month_spend_usd: { type: 'string', description: "What the key (and the keys it was rotated from) spent this UTC month, whatever the period asked" },
      rpm: { type: 'integer', nullable: true, description: "The key's own requests per minute, null: the config's default" },
      tpm: { type: 'integer', nullable: true, description: "The key's own tokens per minute, null: the config's default" },
    }),
  ),
  by_model: listOf(object({ model: nullableString, unknown: boolean, ...usageTotals })),
  daily: listOf(object({ day: string, ...usageTotals })),
  latest: listOf(usageRequest),
  by_endpoint: listOf(
    object({
      endpoint: string,
      requests: integer,
      failed: integer,
      error_rate: number,
      statuses: listOf(object({ status: integer, error_code: nullableString, requests: integer })),
    }),
  ),
  latest_has_more: boolean,
};

export const usageSummary = object({ account_id: string, ...usageSummaryProperties });

/** The admin's view adds the deployments (src/routing/) that served the account's requests. */
export const adminUsageSummary = object({
  account_id: string,
  ...usageSummaryProperties,
  by_deployment: listOf(
    object({ model: nullableString, deployment: nullableString, requests: integer, failed: integer, attempts: integer, retried: integer, cost_usd: string }),
  ),
});

/** An account's or a key's own rpm and tpm (null: the default), and the limits in force (null: none): DESIGN.md 12.4. */
function rateLimitProperties(): Record<string, SchemaObject> {
  const perMinute: SchemaObject = { type: 'integer', nullable: true };
  return { rpm: perMinute, tpm: perMinute, rate_limits: object({ rpm: perMinute, tpm: perMinute }) };
}

export const account = object({
  id: string,
  name: string,
  credits_usd: string,
  reserved_usd: string,
  monthly_limit_usd: { type: 'string', nullable: true },
  month_spend_usd: string,
  ...rateLimitProperties(),
  low_credits_usd: { type: 'string', nullable: true },
  subscription: object({ status: { type: 'string', enum: ['none', 'trial', 'active'] }, ends_at: { type: 'string', nullable: true } }),
  fair_use: object({ used: number, allowance: number, resets_at: string }),
});

const keyProperties: Record<string, SchemaObject> = {
  id: string,
  name: { type: 'string', nullable: true },
  prefix: string,
  created_at: string,
  revoked_at: { type: 'string', nullable: true },
  monthly_limit_usd: { type: 'string', nullable: true },
  month_spend_usd: string,
  expires_at: { type: 'string', nullable: true },
  models: { type: 'array', items: string, nullable: true },
  replaced_by: { type: 'string', nullable: true, description: 'The id of the key this one was rotated to; null: not rotated' },
  ...rateLimitProperties(),
};

export const keyObject = object(keyProperties);

export const createdKey = object({ ...keyProperties, key: string });

export const modelObject = object({ id: string, object: { type: 'string', enum: ['model'] }, created: number, owned_by: string });

export const modelList = object({ object: { type: 'string', enum: ['list'] }, data: { type: 'array', items: modelObject } });

const nullableInteger: SchemaObject = { type: 'integer', nullable: true };

/** A chat model as Anthropic's Models API answers it (a request with anthropic-version). */
export const anthropicModelInfoSchema = object(
  {
    type: { type: 'string', enum: ['model'] },
    id: string,
    display_name: string,
    created_at: { type: 'string', format: 'date-time' },
    max_input_tokens: nullableInteger,
    max_tokens: nullableInteger,
  },
  ['type', 'id', 'display_name', 'created_at'],
);

export const anthropicModelListSchema = object(
  { data: listOf(anthropicModelInfoSchema), has_more: boolean, first_id: nullableString, last_id: nullableString },
  ['data', 'has_more', 'first_id', 'last_id'],
);

export const status = object({ status: string });
