import type * as ApiModule from '@opentelemetry/api';
import type { Tracer } from '@opentelemetry/api';

/** OpenTelemetry's API, required with the SDK when traces are on: with them off, the gateway's code loads none of it. */
export type OtelApi = typeof ApiModule;

/** The running gateway's tracer while traces are on (Tracing sets it at start and clears it at shutdown). */
export interface ActiveTracing {
  readonly tracer: Tracer;
  readonly api: OtelApi;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true. */
  readonly captureContent: boolean;
}

// One per process, as OpenTelemetry's own global tracer provider is: the upstream transports are built by the
// providers' factories, outside Nest's injection, and read it here with one null check per call.
let current: ActiveTracing | null = null;

/** The tracer of the running gateway; null while traces are off (the one check on the request path). */
export function activeTracing(): ActiveTracing | null {
  return current;
}

export function setActiveTracing(tracing: ActiveTracing | null): void {
  current = tracing;
}
