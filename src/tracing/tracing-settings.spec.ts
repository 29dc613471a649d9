import { tracingSettings } from './tracing-settings';

describe(tracingSettings.name, () => {
  it('is off without an OTLP endpoint, or with the SDK disabled or the exporter set to none', () => {
    expect(tracingSettings({})).toBeNull();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeNull();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toBeNull();
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
  });

  it('is on with either endpoint, without message content unless the capture variable is true', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual({ serviceName: 'ai-gateway', exportDelayMs: 5000, captureContent: false });
    expect(
      tracingSettings({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces',
        OTEL_SERVICE_NAME: 'gateway-eu',
        OTEL_BSP_SCHEDULE_DELAY: '200',
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'TRUE',
      }),
    ).toEqual({ serviceName: 'gateway-eu', exportDelayMs: 200, captureContent: true });
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: '1' })?.captureContent).toBe(false);
  });

  it('keeps the default export delay for a value that is not a number', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_BSP_SCHEDULE_DELAY: 'soon' })?.exportDelayMs).toBe(5000);
  });
});
