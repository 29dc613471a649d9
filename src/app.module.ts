import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { AdminModule } from './admin/admin.module';
import { AudioModule } from './audio/audio.module';
import { AuditModule } from './audit/audit.module';
import { ChatModule } from './chat/chat.module';
import { GatewayExceptionFilter } from './common/filters/gateway-exception.filter';
import { StrictValidationPipe } from './common/validation/strict-validation.pipe';
import { LoggingModule } from './common/logging/logging.module';
import { ConfigModule, GatewayOptions } from './config/config.module';
import { DashboardModule } from './dashboard/dashboard.module';
import { databaseModule } from './database/database.module';
import { HealthModule } from './health/health.module';
import { IdempotencyModule } from './idempotency/idempotency.module';
import { ApiKeyGuard } from './keys/api-key.guard';
import { KeysModule } from './keys/keys.module';
import { MessagesModule } from './messages/messages.module';
import { MetricsModule } from './metrics/metrics.module';
import { ModelsModule } from './models/models.module';
import { ResponsesModule } from './responses/responses.module';
import { StatementsModule } from './statements/statements.module';
import { UsageModule } from './usage/usage.module';
import { WebhooksModule } from './webhooks/webhooks.module';

@Module({})
export class AppModule {
  static register(options: GatewayOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.register(options),
        LoggingModule,
        databaseModule(options),
        // The global ApiKeyGuard below resolves here (KeysModule); UsageModule meters every /v1 request.
        KeysModule,
        UsageModule,
        IdempotencyModule,
        ChatModule,
        ResponsesModule,
        MessagesModule,
        AudioModule,
        ModelsModule,
        MetricsModule,
        AdminModule,
        AuditModule,
        HealthModule,
        DashboardModule,
        StatementsModule,
        WebhooksModule,
      ],
      providers: [
        { provide: APP_GUARD, useClass: ApiKeyGuard },
        { provide: APP_FILTER, useClass: GatewayExceptionFilter },
        { provide: APP_PIPE, useClass: StrictValidationPipe },
      ],
    };
  }
}
