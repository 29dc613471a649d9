import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { microsToUsd } from '../common/money';
import { monthKey } from '../common/month';
import type { UsagePeriod } from '../usage/usage-report.service';

/** How many rows the ranked lists hold (top spenders, highest error rate) and the flagged ones at most (near limit, low credits). */
export const RANKED_ROWS = 10;
export const FLAGGED_ROWS = 50;
/** An account is near its monthly limit from this share of it on (month spend / limit). */
export const NEAR_LIMIT_SHARE = 0.8;
/** Without a low-credits threshold of its own, an account in use is low at or under this many µUSD ($1), as its report's headroom says. */
export const DEFAULT_LOW_CREDITS_MICROS = 1_000_000;

export interface OverviewAccount {
  id: string;
  name: string;
  requests: number;
  failed: number;
  error_rate: number;
  cost_usd: string;
  credits_usd: string;
  reserved_usd: string;
  month_spend_usd: string;
  monthly_limit_usd: string | null;
  limit_used: number | null;
  low_credits_usd: string | null;
  payment_refusals: number;
}

/** One account's figures as the query hands them over: money as text (bigint µUSD), ratios as numbers. */
interface FiguresRow {
  id: string;
  name: string;
  requests: number;
  failed: number;
  payment_refusals: number;
  error_rate: number;
  limit_used: number | null;
  cost_micros: string;
  balance_micros: string;
  reserved_micros: string;
  month_spend_micros: string;
  monthly_limit_micros: string | null;
  low_credits_micros: string | null;
}

interface TotalsRow {
  accounts: number;
  active_accounts: number;
  requests: number;
  failed: number;
  payment_refusals: number;
  cost_micros: string;
  near_limit: number;
  low_credits: number;
}

// Every account's figures: the period's usage (read per account through usage_records_account_time_idx, so only the
// period's rows are read however long the history), this UTC month's spend, its money and limits. One statement,
// however many accounts; the lists below are ranked in SQL and only their rows come back.
const FIGURES = `
  figures AS MATERIALIZED (
    SELECT a.id, a.name, a.balance_micros, a.reserved_micros, a.monthly_limit_micros, a.low_credits_micros,
           COALESCE(c.spend_micros, 0) AS month_spend_micros, u.requests, u.failed, u.payment_refusals, u.cost_micros,
           a.balance_micros - a.reserved_micros AS available_micros
      FROM accounts a
      LEFT JOIN monthly_counters c ON c.account_id = a.id AND c.month = $3::date
     CROSS JOIN LATERAL (
       SELECT COUNT(*)::int AS requests, (COUNT(*) FILTER (WHERE r.status >= 400))::int AS failed,
              (COUNT(*) FILTER (WHERE r.status = 402))::int AS payment_refusals, COALESCE(SUM(r.cost_micros), 0)::bigint AS cost_micros
         FROM usage_records r WHERE r.account_id = a.id AND r.created_at >= $1 AND r.created_at < $2
     ) u
  ),
  flagged AS MATERIALIZED (
    SELECT f.*,
           CASE WHEN requests > 0 THEN round(failed::numeric / requests, 4)::float8 ELSE 0 END AS error_rate,
           -- A zero limit allows nothing: it is wholly used.
           CASE WHEN monthly_limit_micros IS NULL THEN NULL WHEN monthly_limit_micros = 0 THEN 1
                ELSE round(month_spend_micros::numeric / monthly_limit_micros, 4)::float8 END AS limit_used,
           monthly_limit_micros IS NOT NULL AND month_spend_micros::numeric >= monthly_limit_micros::numeric * ${NEAR_LIMIT_SHARE} AS near_limit,
           -- Its own threshold, else $1 for an account in use (requests in the period or spend this month): an account
           -- never funded nor used is not news.
           CASE WHEN low_credits_micros IS NOT NULL THEN available_micros <= low_credits_micros
                ELSE available_micros <= ${DEFAULT_LOW_CREDITS_MICROS} AND (requests > 0 OR month_spend_micros > 0) END AS low_credits
      FROM figures f
  )`;

const ROW = `id, name, requests, failed, payment_refusals, error_rate, limit_used, cost_micros::text, balance_micros::text,
  reserved_micros::text, month_spend_micros::text, monthly_limit_micros::text, low_credits_micros::text`;

/** One list: the flagged rows matching `where`, in `order`, at most `limit`, as a JSON array in that order. */
function list(where: string, order: string, limit: number): string {
  return `(SELECT COALESCE(jsonb_agg(to_jsonb(t) - 'pos' ORDER BY t.pos), '[]'::jsonb)
             FROM (SELECT ${ROW}, row_number() OVER (ORDER BY ${order}) AS pos FROM flagged WHERE ${where} ORDER BY pos LIMIT ${limit}) t)`;
}

const OVERVIEW_SQL = `
  WITH ${FIGURES}
  SELECT
    (SELECT jsonb_build_object(
              'accounts', COUNT(*), 'active_accounts', COUNT(*) FILTER (WHERE requests > 0),
              'requests', COALESCE(SUM(requests), 0), 'failed', COALESCE(SUM(failed), 0),
              'payment_refusals', COALESCE(SUM(payment_refusals), 0), 'cost_micros', COALESCE(SUM(cost_micros), 0)::text,
              'near_limit', COUNT(*) FILTER (WHERE near_limit), 'low_credits', COUNT(*) FILTER (WHERE low_credits))
       FROM flagged) AS totals,
    ${list('cost_micros > 0', 'cost_micros DESC, requests DESC, name, id', RANKED_ROWS)} AS top_spenders,
    ${list('near_limit', 'month_spend_micros::numeric / NULLIF(monthly_limit_micros, 0) DESC NULLS FIRST, month_spend_micros DESC, name, id', FLAGGED_ROWS)} AS near_limit,
    ${list('low_credits', 'available_micros, name, id', FLAGGED_ROWS)} AS low_credits,
    ${list('failed > 0', 'failed::numeric / requests DESC, failed DESC, name, id', RANKED_ROWS)} AS highest_error_rate`;

/**
 * The dashboard's landing view (DESIGN.md 12.5): every account's figures over a period, and the accounts an operator
 * should look at first. Period figures (requests, failures, cost, 402s) are the usage records' of the period, as in the
 * account's own report; credits, month spend and limits are the account's now (this UTC month), whatever the period.
 */
@Injectable()
export class OverviewService {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async overview(period: UsagePeriod, now = new Date()) {
    const [row]: { totals: TotalsRow; top_spenders: FiguresRow[]; near_limit: FiguresRow[]; low_credits: FiguresRow[]; highest_error_rate: FiguresRow[] }[] =
      await this.db.transaction(async (tx) => {
        // The planner prices one index read per account high enough to JIT-compile the statement: measured on 5,000
        // accounts and 2 million records, 2 s of compiling for a 0.2 s query. Off for this statement only.
        await tx.query('SET LOCAL jit = off');
        return tx.query(OVERVIEW_SQL, [period.from, period.to, monthKey(now)]);
      });
    const { totals } = row;
    return {
      object: 'overview' as const,
      from: period.from.toISOString(),
      to: period.to.toISOString(),
      month: monthKey(now).slice(0, 7),
      totals: {
        accounts: totals.accounts,
        active_accounts: totals.active_accounts,
        requests: totals.requests,
        failed: totals.failed,
        payment_refusals: totals.payment_refusals,
        cost_usd: microsToUsd(totals.cost_micros),
        near_limit: totals.near_limit,
        low_credits: totals.low_credits,
      },
      top_spenders: row.top_spenders.map(renderAccount),
      near_limit: row.near_limit.map(renderAccount),
      low_credits: row.low_credits.map(renderAccount),
      highest_error_rate: row.highest_error_rate.map(renderAccount),
    };
  }
}

function renderAccount(r: FiguresRow): OverviewAccount {
  return {
    id: r.id,
    name: r.name,
    requests: r.requests,
    failed: r.failed,
    error_rate: r.error_rate,
    cost_usd: microsToUsd(r.cost_micros),
    credits_usd: microsToUsd(r.balance_micros),
    reserved_usd: microsToUsd(r.reserved_micros),
    month_spend_usd: microsToUsd(r.month_spend_micros),
    monthly_limit_usd: r.monthly_limit_micros === null ? null : microsToUsd(r.monthly_limit_micros),
    limit_used: r.limit_used,
    low_credits_usd: r.low_credits_micros === null ? null : microsToUsd(r.low_credits_micros),
    payment_refusals: r.payment_refusals,
  };
}
