import type { SchemaObject } from '@nestjs/swagger';
import { number, object, string } from './schemas';

export { jsonAnswer } from './schemas';

/** Schemas of the answers that are built by services rather than returned as DTO classes. */

export const usagePeriodDescriptions = {
  from: 'Start, inclusive (YYYY-MM-DD, or an RFC 3339 timestamp with Z or ±HH:MM); default: the start of this UTC month',
  to: 'End, exclusive (same format); a date-only value covers that whole UTC day; default: now',
};

const usageSummaryProperties: Record<string, SchemaObject> = {
  from: string,
  to: string,
  totals: { type: 'object' },
  by_key: { type: 'array', items: { type: 'object' } },
  by_model: { type: 'array', items: { type: 'object' } },
  daily: { type: 'array', items: { type: 'object' } },
  latest: { type: 'array', items: { type: 'object' } },
  by_endpoint: { type: 'array', items: { type: 'object' } },
  latest_has_more: { type: 'boolean' },
};

export const usageSummary = object({ account_id: string, ...usageSummaryProperties });

/** The admin's view adds the deployments (src/routing/) that served the account's requests. */
export const adminUsageSummary = object({ account_id: string, ...usageSummaryProperties, by_deployment: { type: 'array', items: { type: 'object' } } });

export const account = object({
  id: string,
  name: string,
  credits_usd: string,
  reserved_usd: string,
  monthly_limit_usd: { type: 'string', nullable: true },
  month_spend_usd: string,
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
};

export const keyObject = object(keyProperties);

export const createdKey = object({ ...keyProperties, key: string });

export const modelObject = object({ id: string, object: { type: 'string', enum: ['model'] }, created: number, owned_by: string });

export const modelList = object({ object: { type: 'string', enum: ['list'] }, data: { type: 'array', items: modelObject } });

export const status = object({ status: string });
