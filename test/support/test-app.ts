import { INestApplication } from '@nestjs/common';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createGatewayApp } from '../../src/app.factory';
import { Env } from '../../src/config/env';
import { loadGatewayConfig, validateGatewayConfig } from '../../src/config/gateway-config.loader';
import { PROVIDER_TYPES } from '../../src/providers/provider-types';
import { GatewayConfig } from '../../src/config/gateway-config.schema';

export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface TestAppOptions {
  /** Edits a plain copy of config/gateway.yaml before validation (add providers, models, limits). */
  config?: (raw: RawConfig) => void;
  env?: Partial<Env>;
  /** Runs on the app before it initialises and listens (a Fastify hook that sees every route, say). */
  beforeListen?: (app: INestApplication) => void;
}

// The YAML shape before validation: tests write it the way operators do.
export type RawConfig = Record<string, any>;

export interface TestApp {
  app: INestApplication;
  /** e.g. http://127.0.0.1:41234 (no trailing slash, no /v1) */
  url: string;
  config: GatewayConfig;
  close(): Promise<void>;
}

export function testDatabaseUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set: run the tests through jest (test/support/global-setup.js)');
  return url;
}

export function defaultRawConfig(): RawConfig {
  return JSON.parse(JSON.stringify(loadGatewayConfig(join(__dirname, '../../config/gateway.yaml'), PROVIDER_TYPES)));
}

/** Boots the real gateway (same factory as production) on a random port against the run's database. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const raw = defaultRawConfig();
  // Idle budget leases go back quickly, so that tests see an account's holds settle to zero soon.
  raw.billing = { ...(raw.billing as object), lease_idle_ms: 100 };
  options.config?.(raw);
  const config = validateGatewayConfig(raw, PROVIDER_TYPES, 'test config');
  const env: Env = {
    port: 0,
    databaseUrl: testDatabaseUrl(),
    redisUrl: undefined,
    adminToken: TEST_ADMIN_TOKEN,
    gatewayConfigPath: 'test',
    logLevel: (process.env.TEST_LOG_LEVEL as Env['logLevel']) ?? 'silent',
    databasePoolMax: 10,
    billingPoolMax: 10,
    trustProxyHops: 0,
    ...options.env,
  };
  const app = await createGatewayApp({ env, config, databaseUrl: env.databaseUrl! });
  options.beforeListen?.(app);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, url: `http://127.0.0.1:${port}`, config, close: () => app.close() };
}
