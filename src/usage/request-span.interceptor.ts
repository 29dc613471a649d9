import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';
import { genAiProviderName } from '../tracing/genai-provider';
import { RequestOutcome, RequestSpan } from '../tracing/request-span';
import { Tracing } from '../tracing/tracing.service';
import { UsageMeter } from './usage-meter';
import { UsageRecordValues } from './usage-record';
import { UsageRecords } from './usage-records';

/** The routes whose span is a GenAI `chat` span (the others get a plain HTTP server span). */
const CHAT_ROUTES = new Set(['/v1/chat/completions', '/v1/responses', '/v1/messages']);
/** A client's model name is kept to this many characters in a span. */
const MAX_MODEL_LENGTH = 128;

/**
 * The trace span of every request made with an API key, while traces are on (src/tracing/): started with the
 * handler (at the request's arrival time), the handler run under it so that its upstream calls are its children,
 * and ended with what the request's usage meter recorded and charged. Off, one null check.
 */
@Injectable()
export class RequestSpanInterceptor implements NestInterceptor {
  /** Each provider's `gen_ai.provider.name`, by its name in the config. */
  private readonly providerNames = new Map<string, string>();

  constructor(
    private readonly tracing: Tracing,
    private readonly records: UsageRecords,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
  ) {
    for (const [name, provider] of Object.entries(config.providers)) this.providerNames.set(name, genAiProviderName(provider.type, name));
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const tracing = this.tracing.active;
    if (!tracing) return next.handle();
    const http = context.switchToHttp();
    const req = http.getRequest<GatewayRequest>();
    const meter = this.records.open(req, http.getResponse<GatewayReply>().raw);
    if (!meter) return next.handle();
    const route = typeof req.routeOptions?.url === 'string' ? req.routeOptions.url : req.url;
    const model = (req.body as { model?: unknown } | undefined)?.model;
    const span = new RequestSpan(tracing, {
      method: req.method,
      route,
      headers: req.headers,
      startTimeMs: arrivalTimeMs(req.receivedAt),
      operation: CHAT_ROUTES.has(route) ? 'chat' : undefined,
      requestModel: typeof model === 'string' ? model.slice(0, MAX_MODEL_LENGTH) : undefined,
      body: req.body,
    });
    meter.whenRecorded((record, costMicros) => span.end(this.outcome(meter, record, costMicros)));
    return span.run(() => next.handle());
  }

  private outcome(meter: UsageMeter, record: UsageRecordValues, costMicros: bigint): RequestOutcome {
    const provider = record.deployment ? record.deployment.split('/', 1)[0] : null;
    return {
      requestId: record.request_id,
      accountId: record.account_id,
      keyId: record.key_id,
      status: record.status,
      errorCode: record.error_code,
      provider: provider === null ? null : (this.providerNames.get(provider) ?? provider),
      responseModel: meter.answer.model,
      responseId: meter.answer.id,
      tokens: {
        input: record.prompt_tokens,
        output: record.completion_tokens,
        cacheRead: record.cached_tokens,
        cacheWrite: record.cache_write_tokens,
        reasoning: record.reasoning_tokens,
      },
      costUsd: Number(costMicros) / 1e6,
      durationMs: record.latency_ms,
    };
  }
}

/** The request's arrival (`receivedAt`, set with its id) in milliseconds since the epoch; now if unknown. */
function arrivalTimeMs(receivedAt: bigint | undefined): number {
  const now = Date.now();
  return receivedAt === undefined ? now : now - Number(process.hrtime.bigint() - receivedAt) / 1e6;
}
