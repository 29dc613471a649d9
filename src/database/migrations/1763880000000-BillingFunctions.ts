import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Billing's money movements as SQL functions, so that each one is a single round trip and runs
 * in one transaction. Lock order everywhere: hold row, then account row, then monthly counter;
 * every writer of spend_micros/held_micros holds the account row lock, which serialises them.
 * Rules and rounding: docs/billing.md.
 */
export class BillingFunctions1763880000000 implements MigrationInterface {
  name = 'BillingFunctions1763880000000';

  async up(q: QueryRunner): Promise<void> {
    // At most one charge per request: a repeated settle can never charge twice.
    await q.query(`CREATE UNIQUE INDEX ledger_entries_charge_request_uq ON ledger_entries (request_id) WHERE kind = 'charge'`);

    // Cost in micro-USD of a token count at prices in pico-USD per token, rounded half up, once.
    await q.query(`
      CREATE FUNCTION billing_cost_micros(p_prompt bigint, p_completion bigint, p_in_picos bigint, p_out_picos bigint)
      RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
        SELECT div(p_prompt::numeric * p_in_picos + p_completion::numeric * p_out_picos + 500000, 1000000)::bigint
      $$`);

    await q.query(`
      CREATE FUNCTION billing_reserve(
        p_account uuid, p_request text, p_prompt bigint, p_requested bigint, p_max_output integer,
        p_in_picos bigint, p_out_picos bigint, p_ttl_ms integer)
      RETURNS TABLE (outcome text, hold_micros bigint, allowance bigint, capped boolean,
                     available_micros bigint, limit_micros bigint, limit_remaining_micros bigint,
                     affordable_tokens bigint, needed_micros bigint)
      LANGUAGE plpgsql AS $$
      DECLARE
        v_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
        v_balance bigint; v_reserved bigint; v_limit bigint; v_spend bigint; v_held bigint;
        v_available bigint; v_limit_remaining bigint; v_budget bigint; v_binding text;
        v_room numeric; v_affordable bigint; v_allowance bigint; v_needed bigint;
      BEGIN
        SELECT a.balance_micros, a.reserved_micros, a.monthly_limit_micros INTO v_balance, v_reserved, v_limit
          FROM accounts a WHERE a.id = p_account FOR UPDATE;
        IF NOT FOUND THEN RAISE EXCEPTION 'billing_reserve: no account %', p_account; END IF;
        INSERT INTO monthly_counters (account_id, month) VALUES (p_account, v_month) ON CONFLICT DO NOTHING;
        SELECT c.spend_micros, c.held_micros INTO v_spend, v_held
          FROM monthly_counters c WHERE c.account_id = p_account AND c.month = v_month;

        v_available := v_balance - v_reserved;
        v_limit_remaining := CASE WHEN v_limit IS NULL THEN NULL ELSE v_limit - v_spend - v_held END;
        -- The tighter of the two constraints is the one reported when the request cannot be afforded.
        IF v_limit_remaining IS NOT NULL AND v_limit_remaining < v_available THEN
          v_budget := v_limit_remaining; v_binding := 'monthly_limit_reached';
        ELSE
          v_budget := v_available; v_binding := 'insufficient_credits';
        END IF;

        -- Largest o with billing_cost_micros(prompt, o) <= budget (rounding half up).
        v_room := (v_budget + 1)::numeric * 1000000 - 500001 - p_prompt::numeric * p_in_picos;
        IF v_room < 0 THEN v_affordable := -1;
        ELSIF p_out_picos = 0 THEN v_affordable := 9223372036854775807;
        ELSE v_affordable := LEAST(div(v_room, p_out_picos), 9223372036854775807)::bigint;
        END IF;

        IF p_requested IS NOT NULL THEN
          v_allowance := p_requested;
          IF v_affordable < p_requested THEN v_allowance := NULL; END IF;
        ELSE
          v_allowance := LEAST(p_max_output, v_affordable);
          IF v_allowance < 1 THEN v_allowance := NULL; END IF;
        END IF;

        v_needed := billing_cost_micros(p_prompt, COALESCE(p_requested, 1), p_in_picos, p_out_picos);
        IF v_allowance IS NULL THEN
          RETURN QUERY SELECT v_binding, 0::bigint, 0::bigint, false, v_available, v_limit, v_limit_remaining,
                              GREATEST(v_affordable, 0), v_needed;
          RETURN;
        END IF;

        v_needed := billing_cost_micros(p_prompt, v_allowance, p_in_picos, p_out_picos);
        INSERT INTO holds (account_id, request_id, amount_micros, month, expires_at)
          VALUES (p_account, p_request, v_needed, v_month, now() + p_ttl_ms * interval '1 millisecond');
        UPDATE accounts SET reserved_micros = reserved_micros + v_needed WHERE id = p_account;
        UPDATE monthly_counters SET held_micros = held_micros + v_needed WHERE account_id = p_account AND month = v_month;
        RETURN QUERY SELECT 'ok'::text, v_needed, v_allowance, (p_requested IS NULL AND v_allowance < p_max_output),
                            v_available - v_needed, v_limit, v_limit_remaining - v_needed, v_affordable, v_needed;
      END
      $$`);

    await q.query(`
      CREATE FUNCTION billing_settle(
        p_account uuid, p_request text, p_prompt bigint, p_completion bigint, p_in_picos bigint, p_out_picos bigint)
      RETURNS TABLE (charged bigint, balance_after bigint)
      LANGUAGE plpgsql AS $$
      DECLARE
        v_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
        v_hold_amount bigint; v_hold_month date;
        v_balance bigint; v_reserved bigint; v_limit bigint; v_spend bigint; v_held bigint;
        v_cost bigint := billing_cost_micros(p_prompt, p_completion, p_in_picos, p_out_picos);
        v_charge bigint;
      BEGIN
        DELETE FROM holds h WHERE h.request_id = p_request AND h.account_id = p_account
          RETURNING h.amount_micros, h.month INTO v_hold_amount, v_hold_month;
        SELECT a.balance_micros, a.reserved_micros, a.monthly_limit_micros INTO v_balance, v_reserved, v_limit
          FROM accounts a WHERE a.id = p_account FOR UPDATE;

        IF v_hold_amount IS NOT NULL THEN
          -- Never more than was held: the hold was affordable, so the balance cannot go negative.
          v_charge := LEAST(v_cost, v_hold_amount);
          UPDATE accounts SET reserved_micros = reserved_micros - v_hold_amount, balance_micros = balance_micros - v_charge
            WHERE id = p_account RETURNING balance_micros INTO v_balance;
          UPDATE monthly_counters SET held_micros = held_micros - v_hold_amount, spend_micros = spend_micros + v_charge
            WHERE account_id = p_account AND month = v_hold_month;
        ELSE
          IF EXISTS (SELECT 1 FROM ledger_entries l WHERE l.request_id = p_request AND l.kind = 'charge') THEN
            RETURN QUERY SELECT 0::bigint, v_balance;  -- already settled
            RETURN;
          END IF;
          -- The hold was swept while the request still ran: charge only what is still free.
          INSERT INTO monthly_counters (account_id, month) VALUES (p_account, v_month) ON CONFLICT DO NOTHING;
          SELECT c.spend_micros, c.held_micros INTO v_spend, v_held
            FROM monthly_counters c WHERE c.account_id = p_account AND c.month = v_month;
          v_charge := GREATEST(0, LEAST(v_cost, v_balance - v_reserved,
                                        COALESCE(v_limit - v_spend - v_held, v_cost)));
          UPDATE accounts SET balance_micros = balance_micros - v_charge
            WHERE id = p_account RETURNING balance_micros INTO v_balance;
          UPDATE monthly_counters SET spend_micros = spend_micros + v_charge WHERE account_id = p_account AND month = v_month;
        END IF;

        IF v_charge > 0 THEN
          INSERT INTO ledger_entries (account_id, kind, amount_micros, balance_after_micros, request_id)
            VALUES (p_account, 'charge', -v_charge, v_balance, p_request);
        END IF;
        RETURN QUERY SELECT v_charge, v_balance;
      END
      $$`);

    await q.query(`
      CREATE FUNCTION billing_release(p_account uuid, p_request text) RETURNS boolean
      LANGUAGE plpgsql AS $$
      DECLARE v_amount bigint; v_month date;
      BEGIN
        DELETE FROM holds h WHERE h.request_id = p_request AND h.account_id = p_account
          RETURNING h.amount_micros, h.month INTO v_amount, v_month;
        IF v_amount IS NULL THEN RETURN false; END IF;  -- settled, released or swept already
        UPDATE accounts SET reserved_micros = reserved_micros - v_amount WHERE id = p_account;
        UPDATE monthly_counters SET held_micros = held_micros - v_amount WHERE account_id = p_account AND month = v_month;
        RETURN true;
      END
      $$`);

    // One sweeper at a time across replicas (advisory lock), accounts updated in a fixed order.
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

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS billing_sweep_holds(integer)`);
    await q.query(`DROP FUNCTION IF EXISTS billing_release(uuid, text)`);
    await q.query(`DROP FUNCTION IF EXISTS billing_settle(uuid, text, bigint, bigint, bigint, bigint)`);
    await q.query(`DROP FUNCTION IF EXISTS billing_reserve(uuid, text, bigint, bigint, integer, bigint, bigint, integer)`);
    await q.query(`DROP FUNCTION IF EXISTS billing_cost_micros(bigint, bigint, bigint, bigint)`);
    await q.query(`DROP INDEX IF EXISTS ledger_entries_charge_request_uq`);
  }
}
