import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Response } from 'express';
import { DataSource } from 'typeorm';
import { microsToUsd } from '../common/money';
import { secondsSince } from '../common/elapsed';
import { CLIENT_CLOSED_REQUEST } from '../common/http/client-abort';
import { GatewayRequest, UsageDraft } from '../common/http/gateway-request';
import { MetricsService } from '../metrics/metrics.service';
import { PendingWriteLost, PendingWrites } from './pending-writes';
import { storableText } from '../common/storable-text';
import { CatalogService } from '../models/catalog.service';

const LATEST_LIMIT = 50;
/** A model id as sent is kept to this many UTF-16 units: enough for any real id, bounded for junk. */
export const MAX_RECORDED_MODEL_LENGTH = 64;

/** A usage record's values as claimRow gives them, keyed by column; the cost is added by its writer. */
export interface UsageRecordValues {
  request_id: string;
  account_id: string;
  key_id: string;
  model: string | null;
  endpoint: string;
  status: number;
  error_code: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  audio_seconds: string;
  input_chars: number;
  latency_ms: number;
  streamed: boolean;
}

const USAGE_RECORD_COLUMNS: (keyof UsageRecordValues)[] = [
  'request_id', 'account_id', 'key_id', 'model', 'endpoint', 'status', 'error_code', 'prompt_tokens',
  'completion_tokens', 'audio_seconds', 'input_chars', 'latency_ms', 'streamed',
];

/**
 * The INSERT of usage records: their values (UsageRecordValues as JSON) from the SQL expression `values`,
 * their cost from the SQL expression `cost`, both over the optional `from` (a FROM item, joined first).
 */
export function usageRecordInsert(values: string, cost: string, from?: string): string {
  const source = `jsonb_populate_record(NULL::usage_records, ${values}) AS r`;
  return (
    `INSERT INTO usage_records (${USAGE_RECORD_COLUMNS.join(', ')}, cost_micros) ` +
    `SELECT ${USAGE_RECORD_COLUMNS.map((c) => `r.${c}`).join(', ')}, ${cost} FROM ${from ? `${from} CROSS JOIN LATERAL ${source}` : source} ` +
    `ON CONFLICT (request_id) DO NOTHING`
  );
}

const INSERT_UNCHARGED = usageRecordInsert('$1::jsonb', '0');

/** The metering state of a request as it starts: nothing counted, nothing recorded. */
export function newUsageDraft(endpoint: string): UsageDraft {
  return {
    endpoint,
    startedAt: process.hrtime.bigint(),
    model: null,
    promptTokens: 0,
    completionTokens: 0,
    audioSeconds: 0,
    inputChars: 0,
    streamed: false,
    errorCode: null,
    recorded: false,
    awaitingSettlement: false,
    closedStatus: null,
  };
}

export interface UsagePeriod {
  from: Date;
  to: Date;
}

interface TotalsRow {
  requests: string;
  prompt_tokens: string;
  completion_tokens: string;
  audio_seconds: string;
  input_chars: string;
  cost_micros: string;
}

@Injectable()
export class UsageService {
  private readonly logger = new Logger(UsageService.name);

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly metrics: MetricsService,
    private readonly pendingWrites: PendingWrites,
    private readonly catalog: CatalogService,
  ) {}

  /**
   * Starts metering an authenticated request: its record is written once, when the response
   * closes, unless billing already wrote it inside its settlement transaction.
   */
  track(req: GatewayRequest, res: Response): void {
    const draft = newUsageDraft(req.path);
    req.usage = draft;
    res.once('close', () => {
      // Closed before the response was complete and with no error of ours: the client went away.
      const clientLeft = !res.headersSent || (!res.writableFinished && draft.errorCode === null);
      const status = clientLeft ? CLIENT_CLOSED_REQUEST : res.statusCode;
      // Noted even when the settlement has claimed the record already: should it fail, the record is
      // written uncharged with this status (settlementAbandoned).
      if (draft.awaitingSettlement) draft.closedStatus = status;
      else if (!draft.recorded) this.recordUncharged(req, status);
    });
  }

  /**
   * The request's hold was released without a charge: its record is written by the response's close,
   * or now when the response has closed already.
   */
  settlementAbandoned(req: GatewayRequest): void {
    const draft = req.usage;
    if (!draft) return;
    draft.awaitingSettlement = false;
    if (draft.closedStatus !== null) this.recordUncharged(req, draft.closedStatus);
  }

  private recordUncharged(req: GatewayRequest, status: number): void {
    const row = this.claimRow(req, status);
    if (!row) return;
    // ON CONFLICT DO NOTHING: attempting it again after an attempt of unknown outcome writes it once.
    const insert = () => this.db.query(INSERT_UNCHARGED, [JSON.stringify(row)]);
    this.pendingWrites
      .write({ kind: 'usage record', requestId: req.id, micros: 0n }, insert(), insert)
      .then(
        () => this.observeRecorded(req, status, 0n),
        (err: Error) => {
          // A lost pending write was logged already.
          if (!(err instanceof PendingWriteLost)) this.logger.error({ err, requestId: req.id }, `Could not write the usage record of ${req.id}`);
        },
      );
  }

  /**
   * The usage record's values before its cost, for usageRecordInsert; null when the record was written
   * already. Claiming marks it written, so each request has one record.
   */
  claimRow(req: GatewayRequest, status: number): UsageRecordValues | null {
    const draft = req.usage;
    if (!draft || !req.auth || draft.recorded) return null;
    draft.recorded = true;
    // A request refused before its handler named the model (validation errors) still records it as sent,
    // made storable: PostgreSQL refuses NUL and lone surrogates, and the whole record with them.
    const requested = (req.body as { model?: unknown } | undefined)?.model;
    if (draft.model === null && typeof requested === 'string') draft.model = storableText(requested, MAX_RECORDED_MODEL_LENGTH);
    const latencyMs = Number((process.hrtime.bigint() - draft.startedAt) / 1_000_000n);
    return {
      request_id: req.id,
      account_id: req.auth.accountId,
      key_id: req.auth.keyId,
      model: draft.model,
      endpoint: draft.endpoint,
      status,
      error_code: draft.errorCode,
      prompt_tokens: draft.promptTokens,
      completion_tokens: draft.completionTokens,
      audio_seconds: draft.audioSeconds.toFixed(3),
      input_chars: draft.inputChars,
      latency_ms: latencyMs,
      streamed: draft.streamed,
    };
  }

  /**
   * Counts a written usage record in the metrics; billing's settlement, which writes the record in its own
   * statement (through claimRow), calls it once that statement has succeeded.
   */
  observeRecorded(req: GatewayRequest, status: number, costMicros: bigint): void {
    const draft = req.usage;
    if (!draft) return;
    this.metrics.observeRequest({
      endpoint: draft.endpoint,
      status,
      errorCode: draft.errorCode,
      model: draft.model,
      latencySeconds: secondsSince(draft.startedAt),
      promptTokens: draft.promptTokens,
      completionTokens: draft.completionTokens,
      audioSeconds: draft.audioSeconds,
      inputChars: draft.inputChars,
      costMicros,
    });
  }

  /**
   * Totals per key, per model and per UTC day, and the latest requests, for one account. Per model: one
   * row per catalog model, one (`model: null`) for requests without a model, and one (`model: null,
   * unknown: true`) for all ids outside the catalog.
   */
  async summary(accountId: string, period: UsagePeriod) {
    const params = [accountId, period.from, period.to];
    const where = `account_id = $1 AND created_at >= $2 AND created_at < $3`;
    const totalsSql = totalsColumns('');
    const [totals, byKey, byModel, daily, latest] = await Promise.all([
      this.db.query(`SELECT ${totalsSql} FROM usage_records WHERE ${where}`, params),
      this.db.query(
        `SELECT u.key_id, k.name AS key_name, k.display_prefix, ${totalsColumns('u.')}
           FROM usage_records u JOIN api_keys k ON k.id = u.key_id
          WHERE u.account_id = $1 AND u.created_at >= $2 AND u.created_at < $3
          GROUP BY u.key_id, k.name, k.display_prefix ORDER BY u.key_id`,
        params,
      ),
      // Ids outside the catalog (refused requests: any string a client sent) make one row, so junk cannot widen the table.
      this.db.query(
        `SELECT CASE WHEN model = ANY($4::text[]) THEN model END AS model,
                COALESCE(model <> ALL($4::text[]), false) AS unknown, ${totalsSql}
           FROM usage_records WHERE ${where} GROUP BY 1, 2 ORDER BY 2, 1 NULLS LAST`,
        [...params, this.catalog.all().map((m) => m.id)],
      ),
      this.db.query(
        `SELECT to_char(date_trunc('day', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, ${totalsSql}
           FROM usage_records WHERE ${where} GROUP BY 1 ORDER BY 1`,
        params,
      ),
      this.db.query(
        `SELECT request_id, key_id, model, endpoint, status, error_code, prompt_tokens, completion_tokens,
                audio_seconds, input_chars, cost_micros, latency_ms, streamed, created_at
           FROM usage_records WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${LATEST_LIMIT}`,
        params,
      ),
    ]);
    return {
      from: period.from.toISOString(),
      to: period.to.toISOString(),
      totals: renderTotals(totals[0]),
      by_key: byKey.map((r: TotalsRow & { key_id: string; key_name: string | null; display_prefix: string }) => ({
        key_id: r.key_id,
        key_name: r.key_name,
        key_prefix: r.display_prefix,
        ...renderTotals(r),
      })),
      by_model: byModel.map((r: TotalsRow & { model: string | null; unknown: boolean }) => ({
        model: r.model,
        unknown: r.unknown,
        ...renderTotals(r),
      })),
      daily: daily.map((r: TotalsRow & { day: string }) => ({ day: r.day, ...renderTotals(r) })),
      latest: latest.map((r: Record<string, unknown>) => ({
        request_id: r.request_id,
        key_id: r.key_id,
        model: r.model,
        endpoint: r.endpoint,
        status: r.status,
        error_code: r.error_code,
        prompt_tokens: r.prompt_tokens,
        completion_tokens: r.completion_tokens,
        audio_seconds: Number(r.audio_seconds),
        input_chars: r.input_chars,
        cost_usd: microsToUsd(r.cost_micros as string),
        latency_ms: r.latency_ms,
        streamed: r.streamed,
        created_at: (r.created_at as Date).toISOString(),
      })),
    };
  }
}

const SUMMED = ['prompt_tokens', 'completion_tokens', 'audio_seconds', 'input_chars', 'cost_micros'];

function totalsColumns(tableAlias: string): string {
  return ['COUNT(*) AS requests', ...SUMMED.map((c) => `COALESCE(SUM(${tableAlias}${c}), 0) AS ${c}`)].join(', ');
}

function renderTotals(r: TotalsRow) {
  return {
    requests: Number(r.requests),
    prompt_tokens: Number(r.prompt_tokens),
    completion_tokens: Number(r.completion_tokens),
    audio_seconds: Number(r.audio_seconds),
    input_chars: Number(r.input_chars),
    cost_usd: microsToUsd(r.cost_micros),
  };
}
