import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit of who did what in the admin API (DESIGN.md 12.5, docs/operations.md "Audit of admin actions"): one row
 * per admin action that succeeded, written after the action (src/audit/). `actor` is `admin` while there is one admin
 * token; `details` holds the request body's fields, never a key's secret. Listed newest first, per account or all.
 */
export class AdminAudit1764380000000 implements MigrationInterface {
  name = 'AdminAudit1764380000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE admin_audit (
        id bigserial PRIMARY KEY,
        created_at timestamptz NOT NULL DEFAULT now(),
        actor text NOT NULL,
        action text NOT NULL,
        account_id uuid NULL,
        key_id uuid NULL,
        request_id text NOT NULL,
        details jsonb NOT NULL DEFAULT '{}'
      )`);
    await q.query(`CREATE INDEX admin_audit_account_idx ON admin_audit (account_id, created_at DESC)`);
    // The list across all accounts (no account_id filter), newest first.
    await q.query(`CREATE INDEX admin_audit_recent_idx ON admin_audit (created_at DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE admin_audit`);
  }
}
