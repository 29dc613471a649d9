import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Which deployment of a model served a request and how many attempts it took (docs/configuration.md,
 * "Deployments"). Nullable: older rows, and requests refused before any upstream call, have neither.
 */
export class UsageDeployment1763950000000 implements MigrationInterface {
  name = 'UsageDeployment1763950000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_records ADD COLUMN deployment text, ADD COLUMN attempts smallint`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_records DROP COLUMN deployment, DROP COLUMN attempts`);
  }
}
