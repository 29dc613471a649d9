-- Deletes up to p_batch holds past their expiry (their replica died) and gives their amounts back; returns
-- how many (to their key's budget too for a key's own lease). Nothing while PostgreSQL has been up for less than p_grace_ms (the caller's lease lifetime): live
-- replicas renew their leases first. One sweeper at a time across replicas (advisory lock), accounts updated
-- in a fixed order.
CREATE OR REPLACE FUNCTION billing_sweep_holds(p_batch integer, p_grace_ms integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE r record; v_count integer := 0;
BEGIN
  IF pg_postmaster_start_time() > now() - p_grace_ms * interval '1 millisecond' THEN RETURN 0; END IF;
  IF NOT pg_try_advisory_xact_lock(hashtext('billing_sweep_holds')) THEN RETURN 0; END IF;
  FOR r IN
    WITH gone AS (
      DELETE FROM holds WHERE id IN (
        SELECT id FROM holds WHERE expires_at < now() ORDER BY expires_at LIMIT p_batch FOR UPDATE SKIP LOCKED)
      RETURNING account_id, month, budget_id, amount_micros)
    SELECT account_id, month, budget_id, sum(amount_micros)::bigint AS amount, count(*)::integer AS n
      FROM gone GROUP BY account_id, month, budget_id ORDER BY account_id, month, budget_id
  LOOP
    PERFORM billing_move_held(r.account_id, r.month, -r.amount);
    PERFORM billing_move_key_held(r.budget_id, r.month, -r.amount);
    v_count := v_count + r.n;
  END LOOP;
  RETURN v_count;
END
$$;
