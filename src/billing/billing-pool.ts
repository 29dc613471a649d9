import { Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { Env } from '../config/env';
import { requestPathTimeouts } from '../database/pool-settings';

export const BILLING_POOL = Symbol('BILLING_POOL');

const logger = new Logger('BillingPool');

/**
 * Connections for the chat hot path (hold and settlement), apart from TypeORM's pool.
 * synchronous_commit=off: a commit returns before its WAL reaches the disk, so the account row lock
 * is not held across a disk flush; every request serialises on that lock, which made the flush the
 * throughput limit of a busy account. A crash of PostgreSQL itself (not of the gateway) can lose
 * the last fraction of a second of holds and charges, never part of one: each is one statement,
 * so balances, holds and the ledger stay consistent and nothing spends past its limits.
 * Operator writes (top-ups, keys, limits) stay on the durable TypeORM pool. docs/billing.md
 */
export function createBillingPool(databaseUrl: string, env: Env): Pool {
  const pool = new Pool({
    connectionString: databaseUrl,
    max: env.billingPoolMax,
    options: '-c synchronous_commit=off',
    ...requestPathTimeouts(),
  });
  // An idle connection that dies (server restart, pg_terminate_backend) is dropped by the pool and
  // replaced on demand; without a listener its 'error' would end the process.
  pool.on('error', (err) => logger.warn(`An idle billing connection failed and was dropped: ${err.message}`));
  return pool;
}
