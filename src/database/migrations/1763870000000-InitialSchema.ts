import { MigrationInterface, QueryRunner } from 'typeorm';

export class InitialSchema1763870000000 implements MigrationInterface {
  name = 'InitialSchema1763870000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS pgcrypto`);
    await q.query(`
      CREATE TABLE accounts (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        balance_micros bigint NOT NULL DEFAULT 0 CHECK (balance_micros >= 0),
        reserved_micros bigint NOT NULL DEFAULT 0 CHECK (reserved_micros >= 0),
        monthly_limit_micros bigint NULL CHECK (monthly_limit_micros >= 0),
        subscription_status text NOT NULL DEFAULT 'none' CHECK (subscription_status IN ('none', 'trial', 'active')),
        subscription_ends_at timestamptz NULL,
        trial_used boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT accounts_reserved_within_balance CHECK (reserved_micros <= balance_micros)
      )`);
    await q.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        name text NULL,
        key_hash char(64) NOT NULL UNIQUE,
        display_prefix text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz NULL
      )`);
    await q.query(`CREATE INDEX api_keys_account_idx ON api_keys (account_id)`);
    await q.query(`
      CREATE TABLE ledger_entries (
        id bigserial PRIMARY KEY,
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('top_up', 'charge')),
        amount_micros bigint NOT NULL,
        balance_after_micros bigint NOT NULL CHECK (balance_after_micros >= 0),
        request_id text NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX ledger_entries_account_idx ON ledger_entries (account_id, id)`);
    await q.query(`
      CREATE TABLE holds (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        request_id text NOT NULL UNIQUE,
        amount_micros bigint NOT NULL CHECK (amount_micros >= 0),
        month date NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX holds_expires_idx ON holds (expires_at)`);
    await q.query(`
      CREATE TABLE monthly_counters (
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        month date NOT NULL,
        spend_micros bigint NOT NULL DEFAULT 0 CHECK (spend_micros >= 0),
        held_micros bigint NOT NULL DEFAULT 0 CHECK (held_micros >= 0),
        fair_use_used integer NOT NULL DEFAULT 0 CHECK (fair_use_used >= 0),
        PRIMARY KEY (account_id, month)
      )`);
    await q.query(`
      CREATE TABLE usage_records (
        id bigserial PRIMARY KEY,
        request_id text NOT NULL UNIQUE,
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        key_id uuid NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
        model text NULL,
        endpoint text NOT NULL,
        status integer NOT NULL,
        error_code text NULL,
        prompt_tokens integer NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
        completion_tokens integer NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
        audio_seconds numeric(12, 3) NOT NULL DEFAULT 0 CHECK (audio_seconds >= 0),
        input_chars integer NOT NULL DEFAULT 0 CHECK (input_chars >= 0),
        cost_micros bigint NOT NULL DEFAULT 0 CHECK (cost_micros >= 0),
        latency_ms integer NOT NULL DEFAULT 0,
        streamed boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX usage_records_account_time_idx ON usage_records (account_id, created_at)`);
    await q.query(`
      CREATE TABLE settings (
        key text PRIMARY KEY,
        value text NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['settings', 'usage_records', 'monthly_counters', 'holds', 'ledger_entries', 'api_keys', 'accounts']) {
      await q.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
}
