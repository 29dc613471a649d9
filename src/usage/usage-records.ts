import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { ServerResponse } from 'node:http';
import { DataSource } from 'typeorm';
import { ErrorAnswerListener } from '../common/http/error-answer-listener';
import { GatewayRequest } from '../common/http/gateway-request';
import { MetricsService } from '../metrics/metrics.service';
import { CatalogService } from '../models/catalog.service';
import { PendingWriteLost, PendingWrites } from './pending-writes';
import { ChargeWriter, MeteredRequest, UsageMeter, UsageRecordSink } from './usage-meter';
import { usageRecordInsert, UsageRecordValues } from './usage-record';

const INSERT_UNCHARGED = usageRecordInsert('$1::jsonb', '0');
/** Each request's meter, while the request lives. */
const meters = new WeakMap<GatewayRequest, UsageMeter>();

/** The meter of a request opened by `UsageRecords.open`. */
export function meterOf(req: GatewayRequest): UsageMeter | undefined {
  return meters.get(req);
}

/**
 * Opens the usage meter of each authenticated request (MeteringInterceptor, or the error answer of a
 * request refused before its handler) and writes what the meters hand over: uncharged records here,
 * charged ones through their settlement; each written record is counted in the metrics.
 */
@Injectable()
export class UsageRecords implements UsageRecordSink, ErrorAnswerListener {
  private readonly logger = new Logger(UsageRecords.name);

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly metrics: MetricsService,
    private readonly pendingWrites: PendingWrites,
    private readonly catalog: CatalogService,
  ) {}

  /** The request's meter, opened on first use; null for a request without an API key (it has no record). */
  open(req: GatewayRequest, res: ServerResponse): UsageMeter | null {
    if (!req.auth) return null;
    let meter = meters.get(req);
    if (!meter) {
      meter = new UsageMeter(this, req as MeteredRequest, res, req.receivedAt, this.catalog);
      meters.set(req, meter);
    }
    return meter;
  }

  /** A request refused before its handler ran (a guard after the API key, the HTTP server) has no other reporter. */
  answeredWithError(req: GatewayRequest, res: ServerResponse, code: string): void {
    const running = meters.get(req);
    if (running) return running.failed(code);
    const meter = this.open(req, res);
    meter?.failed(code);
    meter?.handled();
  }

  writeUncharged(record: UsageRecordValues): void {
    // ON CONFLICT DO NOTHING: attempting it again after an attempt of unknown outcome writes it once.
    const insert = () => this.db.query(INSERT_UNCHARGED, [JSON.stringify(record)]);
    this.pendingWrites.write({ kind: 'usage record', requestId: record.request_id, micros: 0n }, insert(), insert).then(
      () => this.observe(record, 0n),
      (err: Error) => {
        // A lost pending write was logged already.
        if (!(err instanceof PendingWriteLost)) this.logger.error({ err, requestId: record.request_id }, `Could not write the usage record of ${record.request_id}`);
      },
    );
  }

  writeCharged(record: UsageRecordValues, charge: ChargeWriter): void {
    charge(record).then(
      (charged) => this.observe(record, charged),
      (err: Error) => {
        // A lost pending write was logged with its amount already; it has no uncharged record either.
        if (err instanceof PendingWriteLost) return;
        // The settlement did not commit: the request stays uncharged, and its record says so.
        this.logger.error({ err, requestId: record.request_id }, `Could not settle ${record.request_id}: ${err.message}`);
        this.writeUncharged(record);
      },
    );
  }

  private observe(record: UsageRecordValues, costMicros: bigint): void {
    this.metrics.observeRequest({
      endpoint: record.endpoint,
      status: record.status,
      errorCode: record.error_code,
      model: record.model,
      latencySeconds: record.latency_ms / 1000,
      promptTokens: record.prompt_tokens,
      completionTokens: record.completion_tokens,
      classTokens: {
        cached: record.cached_tokens,
        cache_write: record.cache_write_tokens,
        cache_write_1h: record.cache_write_1h_tokens,
        audio_input: record.audio_input_tokens,
        reasoning: record.reasoning_tokens,
        audio_output: record.audio_output_tokens,
      },
      audioSeconds: Number(record.audio_seconds),
      inputChars: record.input_chars,
      costMicros,
    });
  }
}
