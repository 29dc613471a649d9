import type { Tracer } from '@opentelemetry/api';
import type { OtelApi } from './active-tracing';
import { TracingSettings } from './tracing-settings';

/** OpenTelemetry's SDK as the gateway runs it: one tracer, exporting in batches over OTLP/HTTP. */
export interface RunningSdk {
  tracer: Tracer;
  api: OtelApi;
  /** Exports the finished spans now. */
  flush(): Promise<void>;
  /** Exports what is left, then unregisters the globals (another gateway in the same process starts clean). */
  shutdown(): Promise<void>;
}

/**
 * Starts the SDK and registers it as OpenTelemetry's global tracer provider, context manager (AsyncLocalStorage)
 * and propagator (W3C trace context). Loaded only here, when traces are on: with them off the SDK and the exporter
 * are never required. Resolves to null when another tracer provider was registered in this process already.
 */
export async function startOtelSdk(settings: TracingSettings): Promise<RunningSdk | null> {
  const [api, { AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, sdk, { OTLPTraceExporter }, resources] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': settings.serviceName }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  // The exporter reads its endpoint, headers, timeout and compression from the standard variables; it sends JSON.
  const processor = new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter(), scheduledDelayMillis: settings.exportDelayMs });
  const provider = new sdk.TracerProvider({ resource, spanProcessors: [processor] });
  if (!api.trace.setGlobalTracerProvider(provider)) {
    await provider.shutdown();
    return null;
  }
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  return {
    tracer: provider.getTracer('ai-gateway'),
    api,
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      try {
        await provider.shutdown();
      } finally {
        api.trace.disable();
        api.context.disable();
        api.propagation.disable();
      }
    },
  };
}
