import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The token class of 1-hour cache writes (DESIGN.md section 11, docs/billing.md "Token classes"): the usage
 * record's `cache_write_1h_tokens`, a part of `cache_write_tokens` (0 for older rows and for requests without
 * such writes). The cost is computed by the application (src/billing/request-cost.ts) and handed to the
 * settlement, so no SQL function changes.
 */
export class CacheWrite1hTokens1764280000000 implements MigrationInterface {
  name = 'CacheWrite1hTokens1764280000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_records ADD COLUMN cache_write_1h_tokens integer NOT NULL DEFAULT 0`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_records DROP COLUMN cache_write_1h_tokens`);
  }
}
