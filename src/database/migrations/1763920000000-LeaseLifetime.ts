import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Budget leases get a short lifetime (billing.lease_ttl_s, docs/billing.md "Hold sweeper"): a live
 * replica renews its lease rows every few seconds, so a dead replica's lease is swept within seconds.
 * With lifetimes that short, a sweep right after PostgreSQL restarts could take the leases of live
 * replicas that have not had a chance to renew them yet (and a crash may have lost their last
 * renewals, which commit asynchronously): so nothing is swept until the server has been up for
 * p_grace_ms, the sweeping replica's lease lifetime.
 */
export class LeaseLifetime1763920000000 implements MigrationInterface {
  name = 'LeaseLifetime1763920000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION billing_sweep_holds(integer)`);
    // One sweeper at a time across replicas (advisory lock), accounts updated in a fixed order.
    await q.query(`
      CREATE FUNCTION billing_sweep_holds(p_batch integer, p_grace_ms integer) RETURNS integer
      LANGUAGE plpgsql AS $$
      DECLARE r record; v_count integer := 0;
      BEGIN
        IF pg_postmaster_start_time() > now() - p_grace_ms * interval '1 millisecond' THEN RETURN 0; END IF;
        IF NOT pg_try_advisory_xact_lock(hashtext('billing_sweep_holds')) THEN RETURN 0; END IF;
        FOR r IN
          WITH gone AS (
            DELETE FROM holds WHERE id IN (
              SELECT id FROM holds WHERE expires_at < now() ORDER BY expires_at LIMIT p_batch FOR UPDATE SKIP LOCKED)
            RETURNING account_id, month, amount_micros)
          SELECT account_id, month, sum(amount_micros)::bigint AS amount, count(*)::integer AS n
            FROM gone GROUP BY account_id, month ORDER BY account_id, month
        LOOP
          UPDATE accounts SET reserved_micros = reserved_micros - r.amount WHERE id = r.account_id;
          UPDATE monthly_counters SET held_micros = held_micros - r.amount WHERE account_id = r.account_id AND month = r.month;
          v_count := v_count + r.n;
        END LOOP;
        RETURN v_count;
      END
      $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS billing_sweep_holds(integer, integer)`);
    await q.query(`
      CREATE FUNCTION billing_sweep_holds(p_batch integer) RETURNS integer
      LANGUAGE plpgsql AS $$
      DECLARE r record; v_count integer := 0;
      BEGIN
        IF NOT pg_try_advisory_xact_lock(hashtext('billing_sweep_holds')) THEN RETURN 0; END IF;
        FOR r IN
          WITH gone AS (
            DELETE FROM holds WHERE id IN (
              SELECT id FROM holds WHERE expires_at < now() ORDER BY expires_at LIMIT p_batch FOR UPDATE SKIP LOCKED)
            RETURNING account_id, month, amount_micros)
          SELECT account_id, month, sum(amount_micros)::bigint AS amount, count(*)::integer AS n
            FROM gone GROUP BY account_id, month ORDER BY account_id, month
        LOOP
          UPDATE accounts SET reserved_micros = reserved_micros - r.amount WHERE id = r.account_id;
          UPDATE monthly_counters SET held_micros = held_micros - r.amount WHERE account_id = r.account_id AND month = r.month;
          v_count := v_count + r.n;
        END LOOP;
        RETURN v_count;
      END
      $$`);
  }
}
