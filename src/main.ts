import 'reflect-metadata';
import { INestApplication, Logger as NestLogger } from '@nestjs/common';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Logger } from 'pino';
import { FirstStartService } from './admin/first-start.service';
import { createGatewayApp } from './app.factory';
import { resolveLogFormat } from './common/logging/log-output';
import { PinoNestLogger } from './common/logging/pino-nest.logger';
import { rootLoggerFor } from './common/logging/root-logger';
import { Env, readEmbeddedPgEnv, readEnv } from './config/env';
import { loadGatewayConfig } from './config/gateway-config.loader';
import { EmbeddedDatabase, startEmbeddedPostgres } from './database/embedded-postgres';
import { PROVIDER_TYPES } from './providers/provider-types';
import { DATABASE_START_WAIT_MS, waitForDatabase } from './startup/database-reachability';
import { announceStart } from './startup/start-banner';
import { describeStartupFailure, StartupError } from './startup/startup-error';

async function bootstrap(): Promise<void> {
  const env = readEnv();
  const format = resolveLogFormat(env.logFormat);
  const root = rootLoggerFor(env);
  // Nest logs through pino from the first line on, a failed initialisation included.
  NestLogger.overrideLogger(new PinoNestLogger(root));
  const logger = root.child({ context: 'Gateway' });
  const config = loadGatewayConfig(env.gatewayConfigPath, PROVIDER_TYPES);

  let embedded: EmbeddedDatabase | null = null;
  let app: INestApplication | null = null;
  try {
    const pg = env.databaseUrl ? null : readEmbeddedPgEnv();
    if (pg) {
      logger.debug(`No DATABASE_URL: starting embedded PostgreSQL (data in ${pg.dataDir}, port ${pg.port})`);
      const log = (line: string) => logger.debug({ context: 'EmbeddedPostgres' }, line);
      embedded = await startEmbeddedPostgres({ ...pg, portFromEnv: Boolean(process.env.EMBEDDED_PG_PORT), database: 'gateway', log });
    } else {
      logger.debug(`Connecting to DATABASE_URL (giving up after ${DATABASE_START_WAIT_MS / 1000} s)`);
      await waitForDatabase(env.databaseUrl!);
    }
    app = await createGatewayApp({ env, config, databaseUrl: env.databaseUrl ?? embedded!.url });
    stopOnSignals(app, embedded, logger);

    await app.init();
    const firstStart = app.get(FirstStartService);
    await firstStart.seedIfEmpty();
    await listen(app, env);
    const { port } = app.getHttpServer().address() as AddressInfo;
    // What was created to be shown once is shown only now that the gateway listens (by this start or a failed earlier one).
    await firstStart.showUnshown((secrets) => announceStart({ base: `http://localhost:${port}/v1`, ...secrets, embedded: pg }, format, logger));
  } catch (err) {
    // Do not leave the embedded server running behind a gateway that failed to start. The app goes first, as
    // on a stop: its connections end before their server does, and none warns of a server gone away beside
    // the one line that says why the start failed.
    await app?.close().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
    throw err;
  }
}

function stopOnSignals(app: INestApplication, embedded: EmbeddedDatabase | null, logger: Logger): void {
  const shutdown = async (signal: string) => {
    logger.info(`${signal} received: finishing in-flight requests`);
    await app.close();
    await embedded?.stop();
    logger.info('Gateway stopped');
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void shutdown(signal));
}

async function listen(app: INestApplication, env: Env): Promise<void> {
  try {
    await app.listen(env.port, anyAddress());
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new StartupError(`Port ${env.port} (PORT) is already in use by another program (another gateway?). Pick another, e.g. PORT=${env.port + 1} npm start`);
    }
    if (code === 'EACCES') throw new StartupError(`Port ${env.port} (PORT) needs privileges this process lacks. Pick a port above 1023 with PORT.`);
    throw err;
  }
}

/**
 * Every address of the machine, as a bare `server.listen(port)` would take (Fastify's default is localhost
 * only): IPv6's, which takes IPv4 too, where the machine has IPv6, else IPv4's.
 */
function anyAddress(): string {
  const families = Object.values(networkInterfaces()).flatMap((addresses) => (addresses ?? []).map((a) => a.family));
  return families.includes('IPv6') ? '::' : '0.0.0.0';
}

bootstrap().catch((err: unknown) => {
  process.stderr.write(`Gateway failed to start: ${describeStartupFailure(err)}\n`);
  process.exit(1);
});
