import { Pool } from 'pg';

export const BILLING_POOL = Symbol('BILLING_POOL');

/**
 * Connections for the chat hot path (hold and settlement), apart from TypeORM's pool.
 * synchronous_commit=off: a commit returns before its WAL reaches the disk, so the account row lock
 * is not held across a disk flush; every request serialises on that lock, which made the flush the
 * throughput limit of a busy account. A crash of PostgreSQL itself (not of the gateway) can lose
 * the last fraction of a second of holds and charges, never part of one: each is one statement,
 * so balances, holds and the ledger stay consistent and nothing spends past its limits.
 * Operator writes (top-ups, keys, limits) stay on the durable TypeORM pool. docs/billing.md
 */
export function createBillingPool(databaseUrl: string): Pool {
  return new Pool({ connectionString: databaseUrl, max: 20, options: '-c synchronous_commit=off' });
}
