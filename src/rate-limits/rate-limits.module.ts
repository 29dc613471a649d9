import { Module } from '@nestjs/common';
import { ENV } from '../config/config.tokens';
import { Env } from '../config/env';
import { MetricsModule } from '../metrics/metrics.module';
import { RateLimiter, WINDOW_STORE } from './rate-limiter.service';
import { MemoryWindowStore, WindowStore } from './sliding-window';
import { RedisWindowStore } from './sliding-window-redis';

/**
 * rpm and tpm per key and per account (DESIGN.md 12.4), checked by ChatService after the body is read and before the
 * hold: in Redis when REDIS_URL is set (shared by every replica, on a connection of its own), in process otherwise.
 */
@Module({
  imports: [MetricsModule],
  providers: [
    RateLimiter,
    { provide: WINDOW_STORE, inject: [ENV], useFactory: (env: Env): WindowStore => (env.redisUrl ? new RedisWindowStore(env.redisUrl) : new MemoryWindowStore()) },
  ],
  exports: [RateLimiter],
})
export class RateLimitsModule {}
