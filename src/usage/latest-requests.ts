import { DataSource } from 'typeorm';
import { microsToUsd } from '../common/money';
import { ErrorCode, GatewayError } from '../errors';
import type { ToolUse } from './usage-record';

/** How many of the latest requests a summary holds; the rest are read page by page with `latestPage`. */
export const LATEST_LIMIT = 50;

/** The `model` filter's value for the requests recorded without a model (refused before the body named one). */
export const NO_MODEL = '(none)';

export interface UsagePeriod {
  from: Date;
  to: Date;
}

export interface LatestPageQuery {
  /** The request id of the last row already shown: the page starts with the request before it. */
  after?: string;
  limit: number;
}

/** What the dashboard narrows its latest requests to; each one given must hold (src/dashboard/dto/latest-requests-query.dto.ts). */
export interface LatestFilters {
  /** `429`, a class (`4xx`) or `failed` (400 and above). */
  status?: string;
  code?: string;
  keyId?: string;
  /** Exact; NO_MODEL: none recorded. */
  model?: string;
  endpoint?: string;
  streamed?: boolean;
  /** A request id or its first characters. */
  requestId?: string;
}

/** The token classes (DESIGN.md section 10): parts of the prompt and completion tokens (the 1-hour cache writes: of the cache writes), shown beside them. */
export const TOKEN_CLASSES = ['cached_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'reasoning_tokens', 'audio_input_tokens', 'audio_output_tokens'] as const;

/**
 * The account's requests of the period, newest first, `limit` at a time, narrowed by `filters`. `after` is the request
 * id of the last row of the previous page; one that is not among this account's requests is refused (400), so that a
 * stale or foreign cursor never reads as an empty page. The cursor is a place in the order (created_at, id), whatever
 * the filters: the same filters with it give the next rows that match, none skipped or repeated. `withKeys` adds each
 * row's key name and prefix (the dashboard's rows; the usage summaries' schema has no such fields).
 */
export async function latestPage(db: DataSource, accountId: string, period: UsagePeriod, page: LatestPageQuery, filters: LatestFilters = {}, withKeys = false) {
  const params: unknown[] = [accountId, period.from, period.to, page.limit + 1];
  const where: string[] = [];
  const param = (value: unknown) => `$${params.push(value)}`;
  if (page.after !== undefined) {
    const [cursor] = await db.query(`SELECT id FROM usage_records WHERE request_id = $1 AND account_id = $2`, [page.after, accountId]);
    if (!cursor) throw new GatewayError(ErrorCode.InvalidRequest, `after must be the request id of one of this account's requests.`, 'after');
    const id = param(cursor.id);
    // The plain bound on created_at narrows the index range; the row comparison breaks ties within one instant.
    where.push(`u.created_at <= (SELECT created_at FROM usage_records WHERE id = ${id})`);
    where.push(`(u.created_at, u.id) < (SELECT created_at, id FROM usage_records WHERE id = ${id})`);
  }
  where.push(...filterConditions(filters, param));
  // The key is joined on the account too: a row never names another account's key.
  const keys = withKeys ? `LEFT JOIN api_keys k ON k.id = u.key_id AND k.account_id = u.account_id` : '';
  const rows: Record<string, unknown>[] = await db.query(
    `SELECT u.request_id, u.key_id, ${withKeys ? 'k.name AS key_name, k.display_prefix AS key_prefix,' : ''} u.model, u.endpoint, u.status,
            u.error_code, u.prompt_tokens, u.completion_tokens, ${TOKEN_CLASSES.map((c) => `u.${c}`).join(', ')},
            u.audio_seconds, u.input_chars, u.cost_micros, u.latency_ms, u.streamed, u.price_variants, u.tool_uses, u.created_at
       FROM usage_records u ${keys}
      WHERE u.account_id = $1 AND u.created_at >= $2 AND u.created_at < $3 ${where.map((w) => `AND ${w}`).join(' ')}
      ORDER BY u.created_at DESC, u.id DESC LIMIT $4`,
    params,
  );
  const data = rows.slice(0, page.limit).map((r) => (withKeys ? { ...renderRequest(r), key_name: r.key_name ?? null, key_prefix: r.key_prefix ?? null } : renderRequest(r)));
  return { object: 'list' as const, data, has_more: rows.length > page.limit };
}

/**
 * The filters as conditions on the account's rows of the period: each reads columns of the rows the index range
 * (usage_records_account_time_idx) already gives, so a filter never widens the scan beyond the account and period.
 */
function filterConditions(filters: LatestFilters, param: (value: unknown) => string): string[] {
  const where: string[] = [];
  const { status } = filters;
  if (status === 'failed') where.push('u.status >= 400');
  else if (status?.endsWith('xx')) {
    const low = Number(status[0]) * 100;
    where.push(`u.status >= ${param(low)} AND u.status < ${param(low + 100)}`);
  } else if (status !== undefined) where.push(`u.status = ${param(Number(status))}`);
  if (filters.code !== undefined) where.push(`u.error_code = ${param(filters.code)}`);
  if (filters.keyId !== undefined) where.push(`u.key_id = ${param(filters.keyId)}`);
  if (filters.model === NO_MODEL) where.push('u.model IS NULL');
  else if (filters.model !== undefined) where.push(`u.model = ${param(filters.model)}`);
  if (filters.endpoint !== undefined) where.push(`u.endpoint = ${param(filters.endpoint)}`);
  if (filters.streamed !== undefined) where.push(`u.streamed = ${param(filters.streamed)}`);
  // starts_with, not LIKE: the ids' own "_" would be a LIKE wildcard. A whole id is its own prefix.
  if (filters.requestId !== undefined) where.push(`starts_with(u.request_id, ${param(filters.requestId)})`);
  return where;
}

function renderRequest(r: Record<string, unknown>) {
  return {
    request_id: r.request_id,
    key_id: r.key_id,
    model: r.model,
    endpoint: r.endpoint,
    status: r.status,
    error_code: r.error_code,
    prompt_tokens: r.prompt_tokens,
    completion_tokens: r.completion_tokens,
    cached_tokens: r.cached_tokens,
    cache_write_tokens: r.cache_write_tokens,
    cache_write_1h_tokens: r.cache_write_1h_tokens,
    reasoning_tokens: r.reasoning_tokens,
    audio_input_tokens: r.audio_input_tokens,
    audio_output_tokens: r.audio_output_tokens,
    audio_seconds: Number(r.audio_seconds),
    input_chars: r.input_chars,
    cost_usd: microsToUsd(r.cost_micros as string),
    latency_ms: r.latency_ms,
    streamed: r.streamed,
    // How the charge was priced beyond the flat prices (DESIGN.md section 12.2): the variants' `when`, the tools' uses.
    price_variants: r.price_variants ?? [],
    tool_uses: renderToolUses(r.tool_uses as Record<string, ToolUse> | null),
    created_at: (r.created_at as Date).toISOString(),
  };
}

/** Each server tool's uses and their fees in USD (six decimals), by tool. */
export function renderToolUses(tools: Record<string, ToolUse> | null): Record<string, { uses: number; cost_usd: string }> {
  const rendered: Record<string, { uses: number; cost_usd: string }> = {};
  for (const [name, { uses, micros }] of Object.entries(tools ?? {})) rendered[name] = { uses: Number(uses), cost_usd: microsToUsd(micros) };
  return rendered;
}
