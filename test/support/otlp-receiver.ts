import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { gunzipSync, inflateSync } from 'node:zlib';
import { readAll, sleep } from './fake-server';

/** An attribute's value as OTLP/JSON carries it (`{stringValue}`, `{intValue}`, …), made plain. */
export type SpanAttribute = string | number | boolean | null;

/** One span as an OTLP/HTTP receiver reads it (ids in hex, kind and status codes as OTLP's enums: SERVER 2, CLIENT 3; ERROR 2). */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, SpanAttribute>;
  status: { code: number; message?: string };
  /** The resource's attributes (`service.name`). */
  resource: Record<string, SpanAttribute>;
}

interface OtlpKeyValue {
  key: string;
  value?: { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: OtlpKeyValue[];
  status?: { code?: number; message?: string };
}

interface OtlpTraceRequest {
  resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

/**
 * An OpenTelemetry collector's OTLP/HTTP trace endpoint, as small as a test needs: POST /v1/traces with the JSON
 * encoding (what @opentelemetry/exporter-trace-otlp-http sends; gzip or deflate when the exporter compresses),
 * answered 200 `{}` as the OTLP specification says for a full success. Keeps every span received.
 */
export class OtlpReceiver {
  url = '';
  readonly spans: ReceivedSpan[] = [];
  /** Export requests received (whatever they carried). */
  requests = 0;
  readonly contentTypes: string[] = [];
  private server?: Server;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.receive(req).then(
        () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
        (err: Error) => res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ message: err.message })),
      );
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  /** Resolves with the first span received for which `predicate` holds (polled), or throws after `timeoutMs`. */
  async waitForSpan(predicate: (span: ReceivedSpan) => boolean, timeoutMs = 10_000): Promise<ReceivedSpan> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const span = this.spans.find(predicate);
      if (span) return span;
      if (Date.now() > deadline) throw new Error('OTLP receiver: no such span in time');
      await sleep(20);
    }
  }

  /** Resolves with the spans of `traceId` once `done` holds for them (polled), or throws after `timeoutMs`. */
  async waitForTrace(traceId: string, done: (spans: ReceivedSpan[]) => boolean, timeoutMs = 10_000): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + timeoutMs;
    while (!done(this.trace(traceId))) {
      if (Date.now() > deadline) throw new Error(`OTLP receiver: trace ${traceId} incomplete in time; spans: ${JSON.stringify(this.trace(traceId).map((s) => s.name))}`);
      await sleep(20);
    }
    return this.trace(traceId);
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async receive(req: IncomingMessage): Promise<void> {
    const raw = await readAll(req);
    this.requests++;
    if (req.method !== 'POST' || req.url !== '/v1/traces') throw new Error(`unexpected ${req.method} ${req.url}`);
    this.contentTypes.push(String(req.headers['content-type']));
    const encoding = String(req.headers['content-encoding'] ?? '');
    const body = encoding === 'gzip' ? gunzipSync(raw) : encoding === 'deflate' ? inflateSync(raw) : raw;
    const request = JSON.parse(body.toString('utf8')) as OtlpTraceRequest;
    for (const resourceSpans of request.resourceSpans ?? []) {
      const resource = plain(resourceSpans.resource?.attributes);
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          this.spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? '',
            name: span.name,
            kind: span.kind,
            startNs: BigInt(span.startTimeUnixNano),
            endNs: BigInt(span.endTimeUnixNano),
            attributes: plain(span.attributes),
            status: { code: span.status?.code ?? 0, message: span.status?.message },
            resource,
          });
        }
      }
    }
  }
}

function plain(attributes: OtlpKeyValue[] | undefined): Record<string, SpanAttribute> {
  const out: Record<string, SpanAttribute> = {};
  for (const { key, value } of attributes ?? []) {
    if (value?.stringValue !== undefined) out[key] = value.stringValue;
    else if (value?.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value?.doubleValue !== undefined) out[key] = value.doubleValue;
    else if (value?.boolValue !== undefined) out[key] = value.boolValue;
    else out[key] = null;
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  return new OtlpReceiver().start();
}
