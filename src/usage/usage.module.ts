import { Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { ErrorAnswerListener } from '../common/http/error-answer-listener';
import { MetricsModule } from '../metrics/metrics.module';
import { ModelsModule } from '../models/models.module';
import { TracingModule } from '../tracing/tracing.module';
import { MeteringInterceptor } from './metering.interceptor';
import { RequestSpanInterceptor } from './request-span.interceptor';
import { PendingWrites } from './pending-writes';
import { UsageController } from './usage.controller';
import { UsageReportService } from './usage-report.service';
import { UsageRecords } from './usage-records';

@Module({
  imports: [MetricsModule, ModelsModule, TracingModule],
  controllers: [UsageController],
  providers: [
    UsageRecords,
    UsageReportService,
    PendingWrites,
    // The exception filter and the HTTP server's error answers tell the usage records which code a request got.
    { provide: ErrorAnswerListener, useExisting: UsageRecords },
    // Every request made with an API key is metered (MeteringInterceptor opens its UsageMeter).
    { provide: APP_INTERCEPTOR, useClass: MeteringInterceptor },
    // While traces are on, each of those requests has a span ended with what its meter recorded (src/tracing/).
    { provide: APP_INTERCEPTOR, useClass: RequestSpanInterceptor },
  ],
  exports: [UsageRecords, UsageReportService, PendingWrites, ErrorAnswerListener],
})
export class UsageModule {}
