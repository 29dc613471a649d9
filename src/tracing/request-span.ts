import type { Attributes, Context, Span } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import { ActiveTracing, activeTracing } from './active-tracing';
import { inputMessages, outputMessages } from './message-content';

/** Where a request's context keeps its RequestSpan (for recordAnswer). */
const REQUEST_SPAN = Symbol('gateway request span');

/** What is known of a request when its span starts. */
export interface RequestSpanStart {
  method: string;
  /** The route it matched (`/v1/chat/completions`). */
  route: string;
  /** Its headers: the client's `traceparent` and `tracestate`, continued. */
  headers: IncomingHttpHeaders;
  /** When it arrived, in milliseconds since the epoch. */
  startTimeMs: number;
  /** The GenAI operation of a model route (`chat`); unset: a plain HTTP server span. */
  operation?: string;
  /** The body's `model`. */
  requestModel?: string;
  /** The request's body, whose messages are recorded when content capture is on. */
  body?: unknown;
}

/** The tokens of a request by class, as the GenAI conventions count them (the input includes the cache's). */
export interface SpanTokens {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
}

/** How a request ended: what its usage record and its charge say. */
export interface RequestOutcome {
  requestId: string;
  accountId: string;
  keyId: string;
  status: number;
  errorCode: string | null;
  /** OpenTelemetry's name of the provider that served it (`openai`, `anthropic`, `aws.bedrock`), or its name in the config. */
  provider: string | null;
  /** The model and answer id the upstream answered with. */
  responseModel: string | null;
  responseId: string | null;
  tokens: SpanTokens;
  costUsd: number;
  durationMs: number;
}

/**
 * The server span of one request, in the client's trace when it sent a `traceparent`: named and described after
 * OpenTelemetry's GenAI conventions on the model routes (`chat {model}`), plus the gateway's own `gateway.*`.
 */
export class RequestSpan {
  private readonly span: Span;
  private readonly context: Context;

  constructor(
    private readonly tracing: ActiveTracing,
    private readonly start: RequestSpanStart,
  ) {
    const { api, tracer } = tracing;
    const parent = api.propagation.extract(api.ROOT_CONTEXT, start.headers);
    const attributes: Attributes = { 'http.request.method': start.method, 'http.route': start.route };
    if (start.operation) {
      attributes['gen_ai.operation.name'] = start.operation;
      if (start.requestModel) attributes['gen_ai.request.model'] = start.requestModel;
      if (tracing.captureContent) setIfPresent(attributes, 'gen_ai.input.messages', inputMessages(start.body));
    }
    this.span = tracer.startSpan(spanName(start), { kind: api.SpanKind.SERVER, startTime: start.startTimeMs, attributes }, parent);
    this.context = api.trace.setSpan(parent, this.span).setValue(REQUEST_SPAN, this);
  }

  /** Runs `handler` with this span active: the upstream calls it makes are its children. */
  run<T>(handler: () => T): T {
    return this.tracing.api.context.with(this.context, handler);
  }

  /** The answer (chat's shape): its messages are recorded when content capture is on. */
  answered(answer: unknown): void {
    if (!this.tracing.captureContent || !this.start.operation) return;
    const messages = outputMessages(answer);
    if (messages !== null) this.span.setAttribute('gen_ai.output.messages', messages);
  }

  end(outcome: RequestOutcome): void {
    const attributes: Attributes = {
      'http.response.status_code': outcome.status,
      'gateway.request_id': outcome.requestId,
      'gateway.account_id': outcome.accountId,
      'gateway.key_id': outcome.keyId,
      'gateway.cost_usd': outcome.costUsd,
    };
    if (this.start.operation) Object.assign(attributes, genAiOutcome(outcome));
    this.span.setAttributes(attributes);
    if (outcome.errorCode !== null) {
      this.span.setAttribute('error.type', outcome.errorCode);
      this.span.setStatus({ code: this.tracing.api.SpanStatusCode.ERROR, message: outcome.errorCode });
    }
    this.span.end(this.start.startTimeMs + outcome.durationMs);
  }
}

function genAiOutcome({ provider, responseModel, responseId, tokens }: RequestOutcome): Attributes {
  const attributes: Attributes = {
    'gen_ai.usage.input_tokens': tokens.input,
    'gen_ai.usage.output_tokens': tokens.output,
    'gen_ai.usage.cache_read.input_tokens': tokens.cacheRead,
    'gen_ai.usage.cache_creation.input_tokens': tokens.cacheWrite,
    'gen_ai.usage.reasoning.output_tokens': tokens.reasoning,
  };
  setIfPresent(attributes, 'gen_ai.provider.name', provider);
  setIfPresent(attributes, 'gen_ai.response.model', responseModel);
  setIfPresent(attributes, 'gen_ai.response.id', responseId);
  return attributes;
}

/** `{operation} {model}` on a model route (GenAI conventions), else `{method} {route}` (HTTP conventions). */
function spanName(start: RequestSpanStart): string {
  if (!start.operation) return `${start.method} ${start.route}`;
  return start.requestModel ? `${start.operation} ${start.requestModel}` : start.operation;
}

function setIfPresent(attributes: Attributes, name: string, value: string | null | undefined): void {
  if (value) attributes[name] = value;
}

/**
 * The request's answer, in chat's shape (a chat.completion, or `{choices: [{message}]}` of a stream's text), recorded
 * in the span of the request being served when content capture is on. Off, one null check.
 */
export function recordAnswer(answer: () => unknown): void {
  const tracing = activeTracing();
  if (!tracing?.captureContent) return;
  const span = tracing.api.context.active().getValue(REQUEST_SPAN);
  if (span instanceof RequestSpan) span.answered(answer());
}
