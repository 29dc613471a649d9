import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { microsToUsd } from '../common/money';
import { monthKey } from '../common/month';
import { CatalogService } from '../models/catalog.service';
import { LATEST_LIMIT, LatestFilters, latestPage, LatestPageQuery, renderToolUses, TOKEN_CLASSES, UsagePeriod } from './latest-requests';
import type { ToolUse } from './usage-record';

export { LATEST_LIMIT, type LatestFilters, type LatestPageQuery, type UsagePeriod } from './latest-requests';

interface TotalsRow {
  requests: string;
  prompt_tokens: string;
  completion_tokens: string;
  cached_tokens: string;
  cache_write_tokens: string;
  cache_write_1h_tokens: string;
  reasoning_tokens: string;
  audio_input_tokens: string;
  audio_output_tokens: string;
  audio_seconds: string;
  input_chars: string;
  cost_micros: string;
}

interface KeyRow {
  key_id: string;
  key_name: string | null;
  display_prefix: string;
  revoked_at: Date | null;
  monthly_limit_micros: string | null;
  month_spend_micros: string | null;
  rpm: number | null;
  tpm: number | null;
}

interface StatusCountRow {
  endpoint: string;
  status: number;
  error_code: string | null;
  requests: string;
}

// Every query below filters on account_id and a created_at range first, so that it reads one account's
// rows of the period through usage_records_account_time_idx and never another account's.
const IN_PERIOD = `account_id = $1 AND created_at >= $2 AND created_at < $3`;
/** A catalog name: one of the ids and exact aliases ($4), or a name matching an alias pattern ($5, LIKE patterns). */
const CATALOG_MODEL = `(model = ANY($4::text[]) OR model LIKE ANY($5::text[]))`;

/** The usage view of one account over a period: what /v1/usage, the admin API and the dashboard show. */
@Injectable()
export class UsageReportService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly catalog: CatalogService,
  ) {}

  /**
   * The operator's per-deployment breakdown (admin API and dashboard, not /v1/usage: deployments are the
   * gateway's own infrastructure): per model and deployment, requests, failures, the attempts they took, cost.
   * Rows without an upstream call (refused before it, or every deployment out) have `deployment: null`.
   */
  async byDeployment(accountId: string, period: UsagePeriod) {
    const rows: { model: string | null; deployment: string | null; requests: string; failed: string; attempts: string; retried: string; cost_micros: string }[] =
      await this.db.query(
        `SELECT model, deployment, COUNT(*) AS requests, COUNT(*) FILTER (WHERE status >= 400) AS failed,
                COALESCE(SUM(attempts), 0) AS attempts, COUNT(*) FILTER (WHERE attempts > 1) AS retried,
                COALESCE(SUM(cost_micros), 0) AS cost_micros
           FROM usage_records WHERE ${IN_PERIOD} AND ${CATALOG_MODEL} GROUP BY 1, 2 ORDER BY 1, 2 NULLS FIRST`,
        [accountId, period.from, period.to, ...catalogNames(this.catalog)],
      );
    return rows.map((r) => ({
      model: r.model,
      deployment: r.deployment,
      requests: Number(r.requests),
      failed: Number(r.failed),
      attempts: Number(r.attempts),
      retried: Number(r.retried),
      cost_usd: microsToUsd(BigInt(r.cost_micros)),
    }));
  }

  /**
   * Totals per key, per model, per endpoint (with its statuses and error codes) and per UTC day, and the
   * latest requests, for one account. Per model: one row per catalog model and per alias used (recorded as
   * requested), one (`model: null`) for requests without a model, and one (`model: null, unknown: true`)
   * for all ids outside the catalog.
   */
  async summary(accountId: string, period: UsagePeriod) {
    const params = [accountId, period.from, period.to];
    const totalsSql = totalsColumns('');
    const [totals, tools, byKey, byModel, byEndpoint, daily, latest] = await Promise.all([
      this.db.query(`SELECT ${totalsSql} FROM usage_records WHERE ${IN_PERIOD}`, params),
      // The server tools' uses and fees of the period (DESIGN.md section 12.2), by tool: part of cost_usd.
      this.db.query(
        `SELECT t.key AS name, SUM((t.value->>'uses')::bigint)::text AS uses, SUM((t.value->>'micros')::numeric)::text AS micros
           FROM usage_records, jsonb_each(tool_uses) AS t WHERE tool_uses IS NOT NULL AND ${IN_PERIOD} GROUP BY 1 ORDER BY 1`,
        params,
      ),
      // Each key's spend this UTC month against its own limit (key controls), whatever the period asked for.
      this.db.query(
        `SELECT u.key_id, k.name AS key_name, k.display_prefix, k.revoked_at, k.monthly_limit_micros, k.rpm, k.tpm,
                (SELECT c.spend_micros FROM key_monthly_counters c WHERE c.budget_id = k.budget_id AND c.month = $4) AS month_spend_micros,
                ${totalsColumns('u.')}
           FROM usage_records u JOIN api_keys k ON k.id = u.key_id
          WHERE u.account_id = $1 AND u.created_at >= $2 AND u.created_at < $3
          GROUP BY u.key_id, k.name, k.display_prefix, k.revoked_at, k.monthly_limit_micros, k.rpm, k.tpm, k.budget_id ORDER BY u.key_id`,
        [...params, monthKey()],
      ),
      // Ids outside the catalog (refused requests: any string a client sent) make one row, so junk cannot widen the
      // table; names an alias pattern matches are the catalog's (docs/configuration.md, "Aliases").
      this.db.query(
        `SELECT CASE WHEN ${CATALOG_MODEL} THEN model END AS model,
                COALESCE(NOT ${CATALOG_MODEL}, false) AS unknown, ${totalsSql}
           FROM usage_records WHERE ${IN_PERIOD} GROUP BY 1, 2 ORDER BY 2, 1 NULLS LAST`,
        [...params, ...catalogNames(this.catalog)],
      ),
      // Endpoints, statuses and error codes are the gateway's own few values, never a client's: the groups stay few.
      this.db.query(
        `SELECT endpoint, status, error_code, COUNT(*) AS requests
           FROM usage_records WHERE ${IN_PERIOD} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 NULLS FIRST`,
        params,
      ),
      this.db.query(
        `SELECT to_char(date_trunc('day', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, ${totalsSql}
           FROM usage_records WHERE ${IN_PERIOD} GROUP BY 1 ORDER BY 1`,
        params,
      ),
      this.latestPage(accountId, period, { limit: LATEST_LIMIT }),
    ]);
    return {
      from: period.from.toISOString(),
      to: period.to.toISOString(),
      totals: { ...renderTotals(totals[0]), tool_uses: renderToolUses(Object.fromEntries(tools.map((t: ToolUse & { name: string }) => [t.name, t]))) },
      by_key: byKey.map((r: TotalsRow & KeyRow) => ({
        key_id: r.key_id,
        key_name: r.key_name,
        key_prefix: r.display_prefix,
        revoked_at: r.revoked_at?.toISOString() ?? null,
        monthly_limit_usd: r.monthly_limit_micros === null ? null : microsToUsd(r.monthly_limit_micros),
        month_spend_usd: microsToUsd(r.month_spend_micros ?? 0),
        rpm: r.rpm,
        tpm: r.tpm,
        ...renderTotals(r),
      })),
      by_model: byModel.map((r: TotalsRow & { model: string | null; unknown: boolean }) => ({
        model: r.model,
        unknown: r.unknown,
        ...renderTotals(r),
      })),
      by_endpoint: renderEndpoints(byEndpoint),
      daily: daily.map((r: TotalsRow & { day: string }) => ({ day: r.day, ...renderTotals(r) })),
      latest: latest.data,
      latest_has_more: latest.has_more,
    };
  }

  /** A page of the account's requests of the period, newest first (src/usage/latest-requests.ts). */
  latestPage(accountId: string, period: UsagePeriod, page: LatestPageQuery, filters: LatestFilters = {}, withKeys = false) {
    return latestPage(this.db, accountId, period, page, filters, withKeys);
  }
}

const SUMMED = ['prompt_tokens', 'completion_tokens', ...TOKEN_CLASSES, 'audio_seconds', 'input_chars', 'cost_micros'];

function totalsColumns(tableAlias: string): string {
  return ['COUNT(*) AS requests', ...SUMMED.map((c) => `COALESCE(SUM(${tableAlias}${c}), 0) AS ${c}`)].join(', ');
}

function renderTotals(r: TotalsRow) {
  return {
    requests: Number(r.requests),
    prompt_tokens: Number(r.prompt_tokens),
    completion_tokens: Number(r.completion_tokens),
    cached_tokens: Number(r.cached_tokens),
    cache_write_tokens: Number(r.cache_write_tokens),
    cache_write_1h_tokens: Number(r.cache_write_1h_tokens),
    reasoning_tokens: Number(r.reasoning_tokens),
    audio_input_tokens: Number(r.audio_input_tokens),
    audio_output_tokens: Number(r.audio_output_tokens),
    audio_seconds: Number(r.audio_seconds),
    input_chars: Number(r.input_chars),
    cost_usd: microsToUsd(r.cost_micros),
  };
}

interface EndpointUsage {
  endpoint: string;
  requests: number;
  failed: number;
  statuses: { status: number; error_code: string | null; requests: number }[];
}

/** Per endpoint: its requests, how many failed (status 400 or more), that share, and each status and code. */
function renderEndpoints(rows: StatusCountRow[]) {
  const endpoints = new Map<string, EndpointUsage>();
  for (const row of rows) {
    let entry = endpoints.get(row.endpoint);
    if (!entry) endpoints.set(row.endpoint, (entry = { endpoint: row.endpoint, requests: 0, failed: 0, statuses: [] }));
    const requests = Number(row.requests);
    entry.requests += requests;
    if (row.status >= 400) entry.failed += requests;
    entry.statuses.push({ status: row.status, error_code: row.error_code, requests });
  }
  return [...endpoints.values()].map(({ endpoint, requests, failed, statuses }) => ({
    endpoint,
    requests,
    failed,
    error_rate: Math.round((failed / requests) * 10_000) / 10_000,
    statuses,
  }));
}

/** The catalog's names as the parameters of CATALOG_MODEL. */
function catalogNames(catalog: CatalogService): [string[], string[]] {
  const { exact, like } = catalog.names();
  return [exact, like];
}
