import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlFunctionFiles } from '../functions/sql-functions';
import { BillingFunctions1763880000000 } from './1763880000000-BillingFunctions';
import { BillingBatches1763890000000 } from './1763890000000-BillingBatches';
import { BillingLeases1763900000000 } from './1763900000000-BillingLeases';
import { LeaseLifetime1763920000000 } from './1763920000000-LeaseLifetime';

/**
 * One current definition of every SQL function, read from src/database/functions/<name>.sql (docs/billing.md,
 * "Where things live"). Drops billing_reserve, which nothing calls since budget leases, and installs the
 * files: the affordability rule once (billing_reserve_decide), an account's figures and the moves of held
 * amounts as helpers that the lease, release, sweep and swept-settlement functions share. A later change of a
 * function edits its file and adds a migration that installs the files again.
 */
export class BillingFunctionFiles1763930000000 implements MigrationInterface {
  /**
   * SHA-256 of the function files this migration installs (name, NUL, text, NUL, in name order): a test
   * fails when they change, until a new migration installs them (databases migrated already never run this one again).
   */
  static readonly functionFilesSha256 = '3b9a414727184d419124a8726c28c62da4ee4eee40d512c1d53059876a70be6f';
  name = 'BillingFunctionFiles1763930000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION billing_reserve(uuid, text, bigint, bigint, integer, bigint, bigint, integer)`);
    for (const fn of sqlFunctionFiles()) await q.query(fn.sql);
  }

  /** Back to the functions the earlier migrations left, in their words. */
  async down(q: QueryRunner): Promise<void> {
    const previous = await previousDefinitions();
    for (const fn of sqlFunctionFiles()) if (!previous.has(fn.name)) await q.query(`DROP FUNCTION IF EXISTS ${fn.name}`);
    for (const create of previous.values()) await q.query(create.replace(/^\s*CREATE FUNCTION/, 'CREATE OR REPLACE FUNCTION'));
  }
}

/** The CREATE FUNCTION statement of each function the earlier migrations left installed, by name. */
async function previousDefinitions(): Promise<Map<string, string>> {
  const functions = new Map<string, string>();
  // Their statements, recorded instead of run: the last CREATE of a name stands unless a DROP follows it.
  const recorder = {
    query: async (sql: string) => {
      const [, created] = /^\s*CREATE FUNCTION (\w+)\(/.exec(sql) ?? [];
      const [, dropped] = /^\s*DROP FUNCTION (?:IF EXISTS )?(\w+)\(/.exec(sql) ?? [];
      if (created) functions.set(created, sql);
      else if (dropped) functions.delete(dropped);
    },
  } as unknown as QueryRunner;
  const earlier = [new BillingFunctions1763880000000(), new BillingBatches1763890000000(), new BillingLeases1763900000000(), new LeaseLifetime1763920000000()];
  for (const migration of earlier) await migration.up(recorder);
  return functions;
}
