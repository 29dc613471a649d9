import type { Context, Span } from '@opentelemetry/api';
import { activeTracing, OtelApi } from './active-tracing';

/** A Node stream's close, for a span that lasts as long as a streamed answer. */
interface Closable {
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
}

/** Query parameters whose values are credentials (OpenTelemetry's HTTP conventions name the first four). */
const SECRET_QUERY_PARAMS = new Set(['awsaccesskeyid', 'signature', 'sig', 'x-goog-signature', 'key', 'api_key', 'api-key', 'access_token', 'token']);

/**
 * One attempt's HTTP call to an upstream, as a client span (OpenTelemetry's HTTP client conventions) under the
 * request's span: a retried request has one per attempt. Made by startUpstreamSpan, null while traces are off.
 */
export class UpstreamSpan {
  private ended = false;

  constructor(
    private readonly api: OtelApi,
    private readonly span: Span,
    private readonly context: Context,
  ) {}

  /** Adds `traceparent` (and `tracestate`) naming this attempt to the outgoing headers. */
  propagate(headers: Record<string, string>): void {
    this.api.propagation.inject(this.context, headers);
  }

  /**
   * The answer's status arrived. A 2xx span ends when `body` closes (a streamed answer's attempt lasts as long
   * as its stream); another status is its error, and the span ends now.
   */
  answered(status: number, body?: Closable): void {
    this.span.setAttribute('http.response.status_code', status);
    if (status >= 200 && status < 300) {
      if (!body || body.destroyed) this.end();
      else body.once('close', () => this.end());
      return;
    }
    this.failed(String(status));
  }

  /** The attempt failed: `errorType` is the status code, or the failure's kind when no answer came (`unreachable`, `timeout`). */
  failed(errorType: string, message?: string): void {
    if (this.ended) return;
    this.span.setAttribute('error.type', errorType);
    this.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message });
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.span.end();
  }
}

/**
 * The client span of one upstream call (`upstream`: the provider's name in the config), child of the span active
 * where it is called (the request's); null while traces are off.
 */
export function startUpstreamSpan(upstream: string, method: string, url: string): UpstreamSpan | null {
  const tracing = activeTracing();
  if (!tracing) return null;
  const { api, tracer } = tracing;
  const parent = api.context.active();
  const target = new URL(url);
  const span = tracer.startSpan(
    method,
    {
      kind: api.SpanKind.CLIENT,
      attributes: {
        'http.request.method': method,
        'server.address': target.hostname,
        'server.port': Number(target.port) || (target.protocol === 'https:' ? 443 : 80),
        'url.full': redactedUrl(target),
        'gateway.upstream': upstream,
      },
    },
    parent,
  );
  return new UpstreamSpan(api, span, api.trace.setSpan(parent, span));
}

/** The URL without its credentials: no user or password, and the values of credential parameters replaced. */
export function redactedUrl(url: URL): string {
  const copy = new URL(url);
  if (copy.username) copy.username = 'REDACTED';
  if (copy.password) copy.password = 'REDACTED';
  for (const name of [...copy.searchParams.keys()]) {
    if (SECRET_QUERY_PARAMS.has(name.toLowerCase())) copy.searchParams.set(name, 'REDACTED');
  }
  return copy.toString();
}
