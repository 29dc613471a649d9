import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { Logger, Module } from '@nestjs/common';
import { ThrottlerModule, ThrottlerModuleOptions } from '@nestjs/throttler';
import { ENV, GATEWAY_CONFIG } from '../../config/config.tokens';
import { Env } from '../../config/env';
import { GatewayConfig } from '../../config/gateway-config.schema';

/**
 * Counters of the chat burst limit: in Redis when REDIS_URL is set (shared by every replica), in
 * process otherwise. The Redis storage owns its connection and closes it when the app shuts down.
 */
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [GATEWAY_CONFIG, ENV],
      useFactory: (config: GatewayConfig, env: Env): ThrottlerModuleOptions => ({
        // Named "default" so that the headers are plain Retry-After / X-RateLimit-*.
        throttlers: [{ name: 'default', limit: config.limits.chat_burst.requests, ttl: Math.ceil(config.limits.chat_burst.window_s * 1000) }],
        storage: env.redisUrl ? redisStorage(env.redisUrl) : undefined,
      }),
    }),
  ],
})
export class BurstLimitModule {}

function redisStorage(url: string): ThrottlerStorageRedisService {
  const storage = new ThrottlerStorageRedisService(url, { maxRetriesPerRequest: 1, enableAutoPipelining: true });
  const logger = new Logger('BurstLimit');
  let down = false;
  // ioredis reports every failed reconnect; log the outage once, and the recovery.
  storage.redis.on('error', (err: Error) => {
    if (!down) logger.error(`Redis for burst-limit counters unavailable (requests are let through): ${err.message}`);
    down = true;
  });
  storage.redis.on('ready', () => {
    if (down) logger.log('Redis for burst-limit counters is back');
    down = false;
  });
  return storage;
}
