import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Prices as the upstream prices them (DESIGN.md section 12.2, docs/billing.md "Price variants and server
 * tools"): a usage record names the price variants its charge applied (their `when`, in catalog order) and the
 * server tools the upstream ran (`{"web_search": {"uses": 3, "micros": "30000"}}`). Null: flat prices, no tool.
 * The cost is computed by the application and handed to the settlement, so no SQL function changes.
 */
export class PriceVariants1764320000000 implements MigrationInterface {
  name = 'PriceVariants1764320000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_records ADD COLUMN price_variants jsonb, ADD COLUMN tool_uses jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_records DROP COLUMN price_variants, DROP COLUMN tool_uses`);
  }
}
