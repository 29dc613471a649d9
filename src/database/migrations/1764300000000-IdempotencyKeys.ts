import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Idempotency keys (issue 35, docs/idempotency.md): one row per account and key, claimed by the request that runs
 * (`token`, `claimed_until`), then holding its answer (status, headers, body bytes) until `expires_at`.
 */
export class IdempotencyKeys1764300000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE idempotency_keys (
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        key text NOT NULL,
        route text NOT NULL,
        body_hash text NOT NULL,
        token uuid NOT NULL,
        state text NOT NULL CHECK (state IN ('running', 'done')),
        claimed_until timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        status integer,
        headers jsonb,
        body bytea,
        model text,
        streamed boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, key)
      )`);
    await q.query(`CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_keys`);
  }
}
