import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rate limits per account and per key (DESIGN.md 12.4, docs/configuration.md "rate_limits"): requests and tokens per
 * minute of an account's or a key's own; null: the config's default. The keys of one budget (a key and the key it
 * was rotated from) carry the same values. The windows themselves live in Redis (or the process), not here.
 */
export class RateLimits1764340000000 implements MigrationInterface {
  name = 'RateLimits1764340000000';

  async up(q: QueryRunner): Promise<void> {
    for (const table of ['accounts', 'api_keys']) {
      await q.query(`ALTER TABLE ${table} ADD COLUMN rpm integer NULL CHECK (rpm > 0), ADD COLUMN tpm integer NULL CHECK (tpm > 0)`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['accounts', 'api_keys']) await q.query(`ALTER TABLE ${table} DROP COLUMN rpm, DROP COLUMN tpm`);
  }
}
