/** What the standard OpenTelemetry variables ask of the gateway's traces (docs/operations.md, "Traces"). */
export interface TracingSettings {
  /** OTEL_SERVICE_NAME, else `ai-gateway`: the service the spans name. */
  serviceName: string;
  /** OTEL_BSP_SCHEDULE_DELAY: milliseconds between two exports of the finished spans (default 5000). */
  exportDelayMs: number;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts and completions go in the spans (bounded). */
  captureContent: boolean;
}

const DEFAULT_EXPORT_DELAY_MS = 5000;

/**
 * Traces are on when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT, or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
 * unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none; null: off. The exporter reads the rest of the
 * standard variables itself (headers, timeout, compression).
 */
export function tracingSettings(env: NodeJS.ProcessEnv = process.env): TracingSettings | null {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!endpoint || isTrue(env.OTEL_SDK_DISABLED) || env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return null;
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  return {
    serviceName: env.OTEL_SERVICE_NAME?.trim() || 'ai-gateway',
    exportDelayMs: env.OTEL_BSP_SCHEDULE_DELAY && Number.isFinite(delay) && delay >= 0 ? delay : DEFAULT_EXPORT_DELAY_MS,
    captureContent: isTrue(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT),
  };
}

function isTrue(value: string | undefined): boolean {
  return value?.trim().toLowerCase() === 'true';
}
