import { Module } from '@nestjs/common';
import { Tracing } from './tracing.service';
import { tracingSettings } from './tracing-settings';

/** OpenTelemetry traces, on when an OTLP endpoint is set (docs/operations.md, "Traces"). */
@Module({
  providers: [{ provide: Tracing, useFactory: () => new Tracing(tracingSettings()) }],
  exports: [Tracing],
})
export class TracingModule {}
