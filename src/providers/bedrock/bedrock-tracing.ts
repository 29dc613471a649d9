import type { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { startUpstreamSpan } from '../../tracing/upstream-span';

/** The request the SDK is about to send (@smithy/protocol-http's HttpRequest), as far as a span reads it. */
interface WireRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  headers: Record<string, string>;
}

/** An answer's body the span waits for (a stream lasts as long as its events). */
interface WireBody {
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
}

interface WireError {
  name?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

/**
 * While traces are on, each Converse call (one attempt: the SDK's `maxAttempts` is 1) gets its client span, and
 * sends its `traceparent`, as HttpTransport's calls do: a middleware of the SDK's build step, so the header is
 * signed with the rest. Off, one null check per call.
 */
export function traceAttempts(client: BedrockRuntimeClient, name: string): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as WireRequest;
      const port = request.port ? `:${request.port}` : '';
      const span = startUpstreamSpan(name, request.method, `${request.protocol}//${request.hostname}${port}${request.path}`);
      if (!span) return next(args);
      span.propagate(request.headers);
      try {
        const result = await next(args);
        const response = result.response as { statusCode: number; body?: unknown };
        span.answered(response.statusCode, isWireBody(response.body) ? response.body : undefined);
        return result;
      } catch (err) {
        const error = (err ?? {}) as WireError;
        const status = error.$metadata?.httpStatusCode;
        span.failed(status ? String(status) : error.name || 'error', error.message);
        throw err;
      }
    },
    { step: 'build', name: 'gatewayUpstreamSpan' },
  );
}

function isWireBody(body: unknown): body is WireBody {
  return typeof body === 'object' && body !== null && typeof (body as WireBody).once === 'function';
}
