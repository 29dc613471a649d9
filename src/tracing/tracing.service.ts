import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ActiveTracing, setActiveTracing } from './active-tracing';
import { RunningSdk, startOtelSdk } from './otel-sdk';
import { TracingSettings } from './tracing-settings';

/** Traces of the running gateway (DESIGN.md section 12.4): on when the settings say so, started with the app and flushed at its close. */
@Injectable()
export class Tracing implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(Tracing.name);
  private sdk: RunningSdk | null = null;
  private tracing: ActiveTracing | null = null;

  constructor(private readonly settings: TracingSettings | null) {}

  /** The tracer while traces are on; null when off. */
  get active(): ActiveTracing | null {
    return this.tracing;
  }

  async onModuleInit(): Promise<void> {
    if (!this.settings) return;
    this.sdk = await startOtelSdk(this.settings);
    if (!this.sdk) {
      this.logger.warn('Traces are off: another OpenTelemetry tracer provider is registered in this process.');
      return;
    }
    this.tracing = { tracer: this.sdk.tracer, api: this.sdk.api, captureContent: this.settings.captureContent };
    setActiveTracing(this.tracing);
    const content = this.settings.captureContent ? 'with prompts and completions' : 'without message content';
    this.logger.log(`Traces are exported over OTLP/HTTP as ${this.settings.serviceName}, ${content}.`);
  }

  /** Exports the finished spans now. */
  flush(): Promise<void> {
    return this.sdk?.flush() ?? Promise.resolve();
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.sdk) return;
    setActiveTracing(null);
    this.tracing = null;
    const sdk = this.sdk;
    this.sdk = null;
    await sdk.shutdown().catch((err: Error) => this.logger.warn(`Could not export the last spans: ${err.message}`));
  }
}
