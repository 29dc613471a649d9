import { Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { Env } from '../config/env';
import { requestPathTimeouts } from '../common/database/pool-settings';

export const BILLING_POOL = Symbol('BILLING_POOL');

const logger = new Logger('BillingPool');

/**
 * Connections for the chat hot path (lease grows and settlements), apart from TypeORM's pool, so that
 * admin and usage queries never queue in front of a request's billing call. Commits are durable
 * (synchronous_commit on): a charge whose response was delivered must survive a crash of PostgreSQL
 * itself. Group commit (StatementBatcher) shares each WAL flush among the requests that arrive
 * together. docs/billing.md
 */
export function createBillingPool(databaseUrl: string, env: Env): Pool {
  const pool = new Pool({
    connectionString: databaseUrl,
    max: env.billingPoolMax,
    ...requestPathTimeouts(),
  });
  // An idle connection that dies (server restart, pg_terminate_backend) is dropped by the pool and
  // replaced on demand; without a listener its 'error' would end the process.
  pool.on('error', (err) => logger.warn(`An idle billing connection failed and was dropped: ${err.message}`));
  return pool;
}
