import { Logger } from '@nestjs/common';
import { DataSource, DataSourceOptions } from 'typeorm';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';
import { CONNECT_TIMEOUT_MS, requestPathTimeouts } from '../common/database/pool-settings';

// From the package's root: ts-node's type check (the TypeORM CLI, `npm run migration:*`) does not resolve
// TypeORM 1's deep import paths under TypeScript 6.
type PostgresDataSourceOptions = Extract<DataSourceOptions, { type: 'postgres' }>;

/** The schema's options, without timeouts: the TypeORM CLI (ormconfig.ts) and the migrations run with these. */
export function dataSourceOptions(url: string): PostgresDataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsRun: true,
    synchronize: false,
    extra: { max: 10 },
  };
}

/**
 * The app's TypeORM pool: `poolMax` connections with the request-path timeouts. Migrations are not
 * run on it (runMigrations does, first), so the statement timeout never cuts one. `isOpen` says whether
 * the pool is still in use (its DataSource not destroyed).
 */
export function gatewayDataSourceOptions(url: string, poolMax: number, isOpen: () => boolean): PostgresDataSourceOptions {
  const logger = new Logger('DatabasePool');
  return {
    ...dataSourceOptions(url),
    migrationsRun: false,
    extra: { max: poolMax, ...requestPathTimeouts() },
    // An idle connection that dies (server restart, pg_terminate_backend) is dropped and replaced on demand. Once
    // the pool is closed (a stop, a failed start), pg-pool has let go of connections whose end the server has not
    // yet seen: the embedded server, stopped next, ends them, which is expected and not a warning.
    poolErrorHandler: (err: Error) => {
      const line = `An idle database connection failed and was dropped: ${err.message}`;
      if (isOpen()) logger.warn(line);
      else logger.debug(`${line} (the pool was closed)`);
    },
  };
}

/** Any number; the same in every replica, so that replicas starting together migrate one at a time. */
const MIGRATION_LOCK = 7_463_900;

/**
 * Applies pending migrations on a connection of their own, without a statement timeout, then closes it.
 * Replicas booting together on a new database take turns (a session advisory lock): the first migrates,
 * the others then find nothing pending.
 */
export async function runMigrations(url: string): Promise<void> {
  const migrator = new DataSource({ ...dataSourceOptions(url), migrationsRun: false, extra: { max: 1, connectionTimeoutMillis: CONNECT_TIMEOUT_MS } });
  await migrator.initialize();
  try {
    // One connection (max 1): the lock and the migrations share it.
    await migrator.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await migrator.runMigrations({ transaction: 'all' });
  } finally {
    await migrator.destroy();
  }
}
