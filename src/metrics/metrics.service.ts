import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import { CatalogService } from '../models/catalog.service';
import { DeploymentSample, registerDeploymentMetrics } from './deployment-metrics';

export type { DeploymentSample } from './deployment-metrics';

/** Endpoints that may appear as a label value; any other path is counted as "other". */
const ENDPOINTS = new Set([
  '/v1/chat/completions',
  '/v1/responses',
  '/v1/messages',
  '/v1/messages/count_tokens',
  '/v1/audio/transcriptions',
  '/v1/audio/speech',
  '/v1/models',
  '/v1/models/{id}',
  '/v1/usage',
]);

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/**
 * The token classes counted beside prompt and completion (`kind`: the usage record's column without `_tokens`):
 * parts of those totals (cache_write_1h of cache_write), not tokens besides them.
 */
export const TOKEN_CLASS_KINDS = ['cached', 'cache_write', 'cache_write_1h', 'audio_input', 'reasoning', 'audio_output'] as const;
export type TokenClassKind = (typeof TOKEN_CLASS_KINDS)[number];

/** What one finished, authenticated request contributes to the metrics (from its usage record). */
export interface RequestSample {
  endpoint: string;
  status: number;
  errorCode: string | null;
  model: string | null;
  latencySeconds: number;
  promptTokens: number;
  completionTokens: number;
  /** The token classes' counts (absent: 0). */
  classTokens?: Partial<Record<TokenClassKind, number>>;
  audioSeconds: number;
  inputChars: number;
  costMicros: bigint;
}

/**
 * Prometheus metrics of one gateway instance. Each instance owns its registry (several apps may
 * share a process in tests). Label values come from fixed sets only: never key, account or request ids.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  private readonly requests = new Counter({
    name: 'gateway_requests_total',
    help: 'Authenticated requests by endpoint, HTTP status and error code ("none" on success).',
    labelNames: ['endpoint', 'status', 'code'] as const,
    registers: [this.registry],
  });
  private readonly requestDuration = new Histogram({
    name: 'gateway_request_duration_seconds',
    help: 'Whole-request latency, from authentication to the usage record.',
    labelNames: ['endpoint'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly upstreamDuration = new Histogram({
    name: 'gateway_upstream_duration_seconds',
    help: 'Latency of the upstream call (to the end of the answer).',
    labelNames: ['endpoint'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly timeToFirstByte = new Histogram({
    name: 'gateway_stream_time_to_first_byte_seconds',
    help: 'Time from the request to the first streamed byte sent to the client.',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly tokens = new Counter({
    name: 'gateway_tokens_total',
    help: 'Chat tokens recorded, by catalog model and kind: prompt, completion, and the token classes that are parts of them (cached, cache_write, cache_write_1h (of cache_write), audio_input; reasoning, audio_output).',
    labelNames: ['model', 'kind'] as const,
    registers: [this.registry],
  });
  private readonly cost = new Counter({
    name: 'gateway_cost_charged_microusd_total',
    help: 'Credits charged, in micro-USD (1 USD = 1,000,000), by catalog model.',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  private readonly audioSeconds = new Counter({
    name: 'gateway_audio_seconds_total',
    help: 'Seconds of audio transcribed, by catalog model.',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  private readonly speechChars = new Counter({
    name: 'gateway_speech_input_characters_total',
    help: 'Characters of text synthesised to speech, by catalog model.',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  private readonly activeStreams = new Gauge({
    name: 'gateway_active_streams',
    help: 'Streamed chat responses currently open on this instance.',
    registers: [this.registry],
  });
  private readonly burstLimitStoreFailures = new Counter({
    name: 'gateway_burst_limit_store_failures_total',
    help: 'Chat requests let through because the burst-limit counter store (Redis) failed or was unreachable.',
    registers: [this.registry],
  });
  private readonly rateLimitStoreFailures = new Counter({
    name: 'gateway_rate_limit_store_failures_total',
    help: 'Chat requests with an rpm or tpm let through without them because the rate-limit window store (Redis) failed or was unreachable.',
    registers: [this.registry],
  });
  private readonly malformedToolArguments = new Counter({
    name: 'gateway_upstream_malformed_tool_arguments_total',
    help: 'Tool calls from an upstream whose arguments were not a JSON object, by endpoint and catalog model.',
    labelNames: ['endpoint', 'model'] as const,
    registers: [this.registry],
  });
  private readonly ignoredParams = new Counter({
    name: 'gateway_ignored_params_total',
    help: 'Request fields, include values and tools accepted and not used (named in x-gateway-ignored-params), by route and param ("other": a field the gateway does not know).',
    labelNames: ['route', 'param'] as const,
    registers: [this.registry],
  });
  private readonly unpricedAnswers = new Counter({
    name: 'gateway_unpriced_answers_total',
    help: 'Answers that reported a price option (service_tier, speed, inference_geo) or server tool their catalog entry does not price: charged at standard prices (DESIGN.md 12.2), by catalog model and option.',
    labelNames: ['model', 'reason'] as const,
    registers: [this.registry],
  });

  private readonly pendingWrites = new Gauge({
    name: 'gateway_pending_writes',
    help: 'Settlements and usage records of delivered responses waiting for the database to come back (kept in memory, retried).',
    registers: [this.registry],
  });
  private readonly pendingWritesLost = new Counter({
    name: 'gateway_pending_writes_lost_total',
    help: 'Pending writes given up (queue full, or the process stopped before the database came back); each is logged with its request id.',
    registers: [this.registry],
  });

  constructor(
    @InjectDataSource() db: DataSource,
    private readonly catalog: CatalogService,
  ) {
    collectDefaultMetrics({ register: this.registry });
    // prom-client collects all metrics of a scrape concurrently: both hold gauges share one query.
    let pending: Promise<{ count: string; sum: string }[]> | null = null;
    const readHolds = () =>
      (pending ??= db
        .query(`SELECT COUNT(*) AS count, COALESCE(SUM(amount_micros), 0) AS sum FROM holds`)
        // While the database is unreachable the scrape still answers (pending writes matter most then): NaN, not stale figures.
        .catch(() => [{ count: 'NaN', sum: 'NaN' }])
        .finally(() => (pending = null)));
    new Gauge({
      name: 'gateway_outstanding_holds',
      help: 'Credit holds of in-flight chat requests, across all instances (read from the database at scrape time).',
      registers: [this.registry],
      async collect() {
        const [row] = await readHolds();
        this.set(Number(row.count));
      },
    });
    new Gauge({
      name: 'gateway_outstanding_holds_microusd',
      help: 'Sum of the outstanding credit holds, in micro-USD (read from the database at scrape time).',
      registers: [this.registry],
      async collect() {
        const [row] = await readHolds();
        this.set(Number(row.sum));
      },
    });
  }

  /** Counts a finished request; called once per request, when its usage record is written. */
  observeRequest(sample: RequestSample): void {
    const endpoint = endpointLabel(sample.endpoint);
    const model = this.modelLabel(sample.model);
    this.requests.inc({ endpoint, status: String(sample.status), code: sample.errorCode ?? 'none' });
    this.requestDuration.observe({ endpoint }, sample.latencySeconds);
    if (sample.promptTokens > 0) this.tokens.inc({ model, kind: 'prompt' }, sample.promptTokens);
    if (sample.completionTokens > 0) this.tokens.inc({ model, kind: 'completion' }, sample.completionTokens);
    for (const kind of TOKEN_CLASS_KINDS) {
      const count = sample.classTokens?.[kind] ?? 0;
      if (count > 0) this.tokens.inc({ model, kind }, count);
    }
    if (sample.costMicros > 0n) this.cost.inc({ model }, Number(sample.costMicros));
    if (sample.audioSeconds > 0) this.audioSeconds.inc({ model }, sample.audioSeconds);
    if (sample.inputChars > 0) this.speechChars.inc({ model }, sample.inputChars);
  }

  /** Duration of one upstream call, for chat and audio. */
  observeUpstream(endpoint: string, seconds: number): void {
    this.upstreamDuration.observe({ endpoint: endpointLabel(endpoint) }, seconds);
  }

  observeTimeToFirstByte(seconds: number): void {
    this.timeToFirstByte.observe(seconds);
  }

  streamOpened(): void {
    this.activeStreams.inc();
  }

  streamClosed(): void {
    this.activeStreams.dec();
  }

  /** One chat request let through unlimited because the burst-limit store failed. */
  burstLimitStoreFailed(): void {
    this.burstLimitStoreFailures.inc();
  }

  /** One chat request let through without its rpm and tpm because the rate-limit window store failed. */
  rateLimitStoreFailed(): void {
    this.rateLimitStoreFailures.inc();
  }

  /** Tool calls from an upstream whose arguments were not a JSON object (never their content: it may hold user data). */
  upstreamToolArgumentsMalformed(endpoint: string, model: string, calls: number): void {
    this.malformedToolArguments.inc({ endpoint: endpointLabel(endpoint), model: this.modelLabel(model) }, calls);
  }

  /** `reason`: what was unpriced, as `service_tier:flex` or `tool:web_fetch`; counted by its option or `tool` (a closed set). */
  answerUnpriced(model: string, reason: string): void {
    this.unpricedAnswers.inc({ model: this.modelLabel(model), reason: reason.slice(0, reason.indexOf(':')) });
  }

  paramIgnored(route: string, param: string): void {
    this.ignoredParams.inc({ route, param });
  }

  setPendingWrites(count: number): void {
    this.pendingWrites.set(count);
  }

  pendingWriteLost(): void {
    this.pendingWritesLost.inc();
  }

  /** Per-deployment metrics, read from `read` at each scrape (the router's counters). */
  watchDeployments(read: () => DeploymentSample[]): void {
    registerDeploymentMetrics(this.registry, read);
  }

  /** The text exposition of every metric, for GET /metrics. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private modelLabel(model: string | null): string {
    if (model === null) return 'none';
    // By catalog entry: a usage record's alias counts under the entry it names.
    return this.catalog.find(model)?.id ?? 'other';
  }
}

function endpointLabel(path: string): string {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return ENDPOINTS.has(trimmed) ? trimmed : 'other';
}
