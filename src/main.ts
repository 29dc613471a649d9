import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { DemoSeedService } from './admin/demo-seed.service';
import { AdminTokenService } from './admin/admin-token.service';
import { createGatewayApp } from './app.factory';
import { readEmbeddedPgEnv, readEnv } from './config/env';
import { ConfigError, loadGatewayConfig } from './config/gateway-config.loader';
import { EmbeddedDatabase, startEmbeddedPostgres } from './database/embedded-postgres';

async function bootstrap(): Promise<void> {
  const env = readEnv();
  const config = loadGatewayConfig(env.gatewayConfigPath);

  let embedded: EmbeddedDatabase | null = null;
  try {
    if (!env.databaseUrl) {
      const pg = readEmbeddedPgEnv();
      process.stdout.write(`No DATABASE_URL: starting embedded PostgreSQL (data in ${pg.dataDir}, port ${pg.port})\n`);
      embedded = await startEmbeddedPostgres({ dataDir: pg.dataDir, port: pg.port, database: 'gateway' });
    }
    const databaseUrl = env.databaseUrl ?? embedded!.url;

    const app = await createGatewayApp({ env, config, databaseUrl });
    const shutdown = async (signal: string) => {
      process.stdout.write(`${signal} received: finishing in-flight requests\n`);
      await app.close();
      await embedded?.stop();
      process.stdout.write('Gateway stopped\n');
      process.exit(0);
    };
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void shutdown(signal));

    await app.init();
    const adminToken = app.get(AdminTokenService).generatedToken;
    const demo = await app.get(DemoSeedService).seedIfEmpty();
    await app.listen(env.port);
    const { port } = app.getHttpServer().address() as AddressInfo;
    const base = `http://localhost:${port}/v1`;
    process.stdout.write(`Gateway listening on ${base}\n`);
    if (adminToken) process.stdout.write(`Admin token (shown once, keep it): ${adminToken}\n`);
    if (demo) {
      process.stdout.write(`Demo account ${demo.accountId}: $5.00 credits, 14-day trial\n`);
      process.stdout.write(`Demo API key (shown once, keep it): ${demo.key}\n`);
    }
  } catch (err) {
    // Do not leave the embedded server running behind a gateway that failed to start.
    await embedded?.stop().catch(() => undefined);
    throw err;
  }
}

bootstrap().catch((err: Error) => {
  const message = err instanceof ConfigError ? err.message : (err.stack ?? String(err));
  process.stderr.write(`Gateway failed to start: ${message}\n`);
  process.exit(1);
});
