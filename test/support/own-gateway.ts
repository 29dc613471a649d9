import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { FAKE_OPENAI_KEY, FAKE_OPENAI_KEY_ENV } from './fake-upstream';
import { GatewayProcess } from './fault-gateway';
import { defaultRawConfig, RawConfig, TEST_ADMIN_TOKEN, testDatabaseUrl } from './test-app';

export interface OwnGatewayOptions {
  /** Edits the default config (config/gateway.yaml, idle leases back after 100 ms as in startTestApp). */
  config?: (raw: RawConfig) => void;
  /** More environment for the gateway (a provider's api_key_env). */
  env?: Record<string, string>;
  /** REDIS_URL; none: the burst counters live in the gateway's process. */
  redisUrl?: string;
  /** LOG_LEVEL; `warn` unless given. */
  logLevel?: string;
}

export interface OwnGateway {
  /** e.g. http://127.0.0.1:41234 (no /v1). */
  url: string;
  process: GatewayProcess;
  stop(): Promise<void>;
}

/**
 * The gateway as a process of its own (dist/src/main.js, test/support/built-gateway.ts), against the run's database: for timed tests, whose
 * measurements must not include jest's own work, heap and collections (docs/chat-testing.md).
 */
export async function startOwnGateway(options: OwnGatewayOptions = {}): Promise<OwnGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'own-gateway-'));
  const raw = defaultRawConfig();
  raw.billing = { ...(raw.billing as object), lease_idle_ms: 100 };
  options.config?.(raw);
  writeFileSync(join(dir, 'gateway.yaml'), stringify(raw));
  const env: Record<string, string> = {
    DATABASE_URL: testDatabaseUrl(),
    PORT: '0',
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    GATEWAY_CONFIG: join(dir, 'gateway.yaml'),
    LOG_LEVEL: options.logLevel ?? 'warn',
    // The key the tests' configs of the fake OpenAI name (fakeOpenAiProvider).
    [FAKE_OPENAI_KEY_ENV]: FAKE_OPENAI_KEY,
  };
  if (options.redisUrl) env.REDIS_URL = options.redisUrl;
  Object.assign(env, options.env);
  const gateway = new GatewayProcess({ name: 'gateway', env, logFile: join(dir, 'gateway.log') });
  try {
    return {
      url: await gateway.ready(),
      process: gateway,
      stop: async () => {
        await gateway.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await gateway.stop();
    throw err;
  }
}
