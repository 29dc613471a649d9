import { Module } from '@nestjs/common';
import { ThrottlerModule, ThrottlerModuleOptions } from '@nestjs/throttler';
import { ENV, GATEWAY_CONFIG } from '../config/config.tokens';
import { Env } from '../config/env';
import { GatewayConfig } from '../config/gateway-config.schema';
import { MetricsModule } from '../metrics/metrics.module';
import { MetricsService } from '../metrics/metrics.service';
import { FixedWindowRedisStorage } from './fixed-window-redis-storage';
import { FixedWindowMemoryStorage } from './fixed-window-storage';

/**
 * Counters of the chat burst limit, in fixed windows: in Redis when REDIS_URL is set (shared by every
 * replica), in process otherwise. The Redis storage owns its connection and closes it at shutdown.
 */
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      imports: [MetricsModule],
      inject: [GATEWAY_CONFIG, ENV, MetricsService],
      useFactory: (config: GatewayConfig, env: Env, metrics: MetricsService): ThrottlerModuleOptions => ({
        // Named "default" so that the headers are plain Retry-After / X-RateLimit-*.
        throttlers: [{ name: 'default', limit: config.limits.chat_burst.requests, ttl: Math.ceil(config.limits.chat_burst.window_s * 1000) }],
        storage: env.redisUrl ? new FixedWindowRedisStorage(env.redisUrl, metrics) : new FixedWindowMemoryStorage(),
      }),
    }),
  ],
  // AccountThrottlerGuard runs in ChatModule's scope and needs the throttler's options and storage there.
  exports: [ThrottlerModule],
})
export class BurstLimitModule {}
