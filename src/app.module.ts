import { DynamicModule, MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { AdminModule } from './admin/admin.module';
import { AudioModule } from './audio/audio.module';
import { BillingModule } from './billing/billing.module';
import { ChatModule } from './chat/chat.module';
import { BurstLimitModule } from './burst-limit/burst-limit.module';
import { GatewayExceptionFilter } from './common/filters/gateway-exception.filter';
import { AccessLogMiddleware } from './common/http/access-log.middleware';
import { RouteRulesMiddleware } from './common/http/route-rules.middleware';
import { LoggingModule } from './common/logging/logging.module';
import { ConfigModule, GatewayOptions } from './config/config.module';
import { DashboardModule } from './dashboard/dashboard.module';
import { databaseModule } from './database/database.module';
import { EntitlementsModule } from './entitlements/entitlements.module';
import { HealthModule } from './health/health.module';
import { ApiKeyGuard } from './keys/api-key.guard';
import { KeysModule } from './keys/keys.module';
import { MetricsModule } from './metrics/metrics.module';
import { ModelsModule } from './models/models.module';
import { ProvidersModule } from './providers/providers.module';
import { UsageModule } from './usage/usage.module';

@Module({})
export class AppModule implements NestModule {
  static register(options: GatewayOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.register(options),
        LoggingModule,
        databaseModule(options),
        KeysModule,
        MetricsModule,
        UsageModule,
        BillingModule,
        BurstLimitModule,
        EntitlementsModule,
        ModelsModule,
        ProvidersModule,
        ChatModule,
        AudioModule,
        AdminModule,
        HealthModule,
        DashboardModule,
      ],
      providers: [
        { provide: APP_GUARD, useClass: ApiKeyGuard },
        { provide: APP_FILTER, useClass: GatewayExceptionFilter },
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(AccessLogMiddleware, RouteRulesMiddleware).forRoutes({ path: '*path', method: RequestMethod.ALL });
  }
}
