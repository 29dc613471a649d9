import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Holds and settlements of many concurrent requests in one call, so one round trip and one commit
 * (BillingService batches the requests that arrive while the previous call runs). The rules are
 * those of billing_reserve and billing_settle, item by item in input order within an account; what
 * changes is that an account's row and monthly counter are written once per call instead of once
 * per request, which is what an account's busy row costs PostgreSQL most.
 *
 * Lock order stays hold rows → account rows (ascending id) → monthly counters, as everywhere else,
 * so batches, single statements and the sweeper never wait on each other in a cycle. Item numbers
 * are 0-based positions in the input array.
 */
export class BillingBatches1763890000000 implements MigrationInterface {
  name = 'BillingBatches1763890000000';

  async up(q: QueryRunner): Promise<void> {
    // billing_reserve's decision, on figures read under the account row lock (no table access).
    await q.query(`
      CREATE FUNCTION billing_reserve_decide(
        p_available bigint, p_limit bigint, p_limit_remaining bigint, p_prompt bigint, p_requested bigint,
        p_max_output integer, p_in_picos bigint, p_out_picos bigint)
      RETURNS TABLE (outcome text, hold_micros bigint, allowance bigint, capped boolean,
                     available_micros bigint, limit_micros bigint, limit_remaining_micros bigint,
                     affordable_tokens bigint, needed_micros bigint)
      LANGUAGE plpgsql IMMUTABLE AS $$
      DECLARE
        v_budget bigint; v_binding text; v_room numeric; v_affordable bigint; v_allowance bigint; v_needed bigint;
      BEGIN
        -- The tighter of the two constraints is the one reported when the request cannot be afforded.
        IF p_limit_remaining IS NOT NULL AND p_limit_remaining < p_available THEN
          v_budget := p_limit_remaining; v_binding := 'monthly_limit_reached';
        ELSE
          v_budget := p_available; v_binding := 'insufficient_credits';
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

        IF v_allowance IS NULL THEN
          RETURN QUERY SELECT v_binding, 0::bigint, 0::bigint, false, p_available, p_limit, p_limit_remaining,
                              GREATEST(v_affordable, 0), billing_cost_micros(p_prompt, COALESCE(p_requested, 1), p_in_picos, p_out_picos);
          RETURN;
        END IF;
        v_needed := billing_cost_micros(p_prompt, v_allowance, p_in_picos, p_out_picos);
        RETURN QUERY SELECT 'ok'::text, v_needed, v_allowance, (p_requested IS NULL AND v_allowance < p_max_output),
                            p_available - v_needed, p_limit, p_limit_remaining - v_needed, v_affordable, v_needed;
      END
      $$`);

    await q.query(`
      CREATE FUNCTION billing_reserve_batch(p_items jsonb)
      RETURNS TABLE (item integer, outcome text, hold_micros bigint, allowance bigint, capped boolean,
                     available_micros bigint, limit_micros bigint, limit_remaining_micros bigint,
                     affordable_tokens bigint, needed_micros bigint)
      LANGUAGE plpgsql AS $$
      DECLARE
        v_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
        r record; d record;
        v_account uuid;
        v_balance bigint; v_reserved bigint; v_limit bigint; v_spend bigint; v_held bigint; v_added bigint;
        v_requests text[]; v_amounts bigint[]; v_expiries timestamptz[];
      BEGIN
        FOR r IN
          SELECT (e.ord - 1)::integer AS i, (e.v->>'account')::uuid AS account, e.v
            FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(v, ord)
           ORDER BY 2, e.ord
        LOOP
          IF v_account IS DISTINCT FROM r.account THEN
            IF v_account IS NOT NULL THEN
              PERFORM billing_apply_holds(v_account, v_month, v_added, v_requests, v_amounts, v_expiries);
            END IF;
            v_account := r.account;
            SELECT a.balance_micros, a.reserved_micros, a.monthly_limit_micros INTO v_balance, v_reserved, v_limit
              FROM accounts a WHERE a.id = v_account FOR UPDATE;
            IF NOT FOUND THEN RAISE EXCEPTION 'billing_reserve_batch: no account %', v_account; END IF;
            SELECT c.spend_micros, c.held_micros INTO v_spend, v_held
              FROM monthly_counters c WHERE c.account_id = v_account AND c.month = v_month;
            IF NOT FOUND THEN
              INSERT INTO monthly_counters (account_id, month) VALUES (v_account, v_month) ON CONFLICT DO NOTHING;
              v_spend := 0; v_held := 0;
            END IF;
            v_added := 0; v_requests := '{}'; v_amounts := '{}'; v_expiries := '{}';
          END IF;

          SELECT * INTO d FROM billing_reserve_decide(
            v_balance - v_reserved - v_added, v_limit,
            CASE WHEN v_limit IS NULL THEN NULL ELSE v_limit - v_spend - v_held - v_added END,
            (r.v->>'prompt')::bigint, (r.v->>'requested')::bigint, (r.v->>'max_output')::integer,
            (r.v->>'in_picos')::bigint, (r.v->>'out_picos')::bigint);
          IF d.outcome = 'ok' THEN
            v_added := v_added + d.hold_micros;
            v_requests := v_requests || (r.v->>'request');
            v_amounts := v_amounts || d.hold_micros;
            v_expiries := v_expiries || (now() + (r.v->>'ttl_ms')::integer * interval '1 millisecond');
          END IF;
          RETURN QUERY SELECT r.i, d.outcome, d.hold_micros, d.allowance, d.capped, d.available_micros, d.limit_micros,
                              d.limit_remaining_micros, d.affordable_tokens, d.needed_micros;
        END LOOP;
        IF v_account IS NOT NULL THEN
          PERFORM billing_apply_holds(v_account, v_month, v_added, v_requests, v_amounts, v_expiries);
        END IF;
      END
      $$`);

    // The holds granted to one account in a batch: their rows, and the account's and month's totals once.
    await q.query(`
      CREATE FUNCTION billing_apply_holds(p_account uuid, p_month date, p_added bigint,
                                          p_requests text[], p_amounts bigint[], p_expiries timestamptz[])
      RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        IF p_added = 0 AND cardinality(p_requests) = 0 THEN RETURN; END IF;
        INSERT INTO holds (account_id, request_id, amount_micros, month, expires_at)
          SELECT p_account, h.request, h.amount, p_month, h.expires
            FROM unnest(p_requests, p_amounts, p_expiries) AS h(request, amount, expires);
        UPDATE accounts SET reserved_micros = reserved_micros + p_added WHERE id = p_account;
        UPDATE monthly_counters SET held_micros = held_micros + p_added WHERE account_id = p_account AND month = p_month;
      END
      $$`);

    await q.query(`
      CREATE FUNCTION billing_settle_batch(p_items jsonb)
      RETURNS TABLE (item integer, charged bigint)
      LANGUAGE plpgsql AS $$
      DECLARE
        r record;
        v_taken_requests text[]; v_taken_amounts bigint[]; v_taken_months date[];
        v_account uuid; v_balance bigint; v_charge bigint;
        v_released bigint; v_charged bigint; v_months date[]; v_month_released bigint[]; v_month_charged bigint[];
        v_ledger_requests text[]; v_ledger_amounts bigint[]; v_ledger_balances bigint[];
      BEGIN
        -- Hold rows first, as every settlement takes them.
        WITH gone AS (
          DELETE FROM holds h
           USING jsonb_array_elements(p_items) AS e(v)
           WHERE h.request_id = e.v->>'request' AND h.account_id = (e.v->>'account')::uuid
          RETURNING h.request_id, h.amount_micros, h.month)
        SELECT COALESCE(array_agg(request_id), '{}'), COALESCE(array_agg(amount_micros), '{}'), COALESCE(array_agg(month), '{}')
          INTO v_taken_requests, v_taken_amounts, v_taken_months FROM gone;

        FOR r IN
          SELECT (e.ord - 1)::integer AS i, (e.v->>'account')::uuid AS account, e.v->>'request' AS request,
                 billing_cost_micros((e.v->>'prompt')::bigint, (e.v->>'completion')::bigint,
                                     (e.v->>'in_picos')::bigint, (e.v->>'out_picos')::bigint) AS cost,
                 t.amount AS held, t.month
            FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(v, ord)
            LEFT JOIN unnest(v_taken_requests, v_taken_amounts, v_taken_months) AS t(request, amount, month)
              ON t.request = e.v->>'request'
           -- Per account: the requests whose hold is gone first (they settle on their own), then the rest.
           ORDER BY 2, (t.amount IS NOT NULL), e.ord
        LOOP
          IF v_account IS DISTINCT FROM r.account THEN
            IF v_account IS NOT NULL THEN
              PERFORM billing_apply_charges(v_account, v_balance, v_released, v_months, v_month_released, v_month_charged,
                                            v_ledger_requests, v_ledger_amounts, v_ledger_balances);
            END IF;
            v_account := r.account;
            PERFORM 1 FROM accounts a WHERE a.id = v_account FOR UPDATE;
            v_balance := NULL; v_released := 0; v_months := '{}'; v_month_released := '{}'; v_month_charged := '{}';
            v_ledger_requests := '{}'; v_ledger_amounts := '{}'; v_ledger_balances := '{}';
          END IF;

          IF r.held IS NULL THEN
            -- Settled already, or swept while it ran: billing_settle knows both cases.
            RETURN QUERY SELECT r.i, s.charged FROM billing_settle(
              r.account, r.request, ((p_items -> r.i)->>'prompt')::bigint, ((p_items -> r.i)->>'completion')::bigint,
              ((p_items -> r.i)->>'in_picos')::bigint, ((p_items -> r.i)->>'out_picos')::bigint) s;
            CONTINUE;
          END IF;
          IF v_balance IS NULL THEN
            SELECT a.balance_micros INTO v_balance FROM accounts a WHERE a.id = v_account;
          END IF;
          -- Never more than was held: the hold was affordable, so the balance cannot go negative.
          v_charge := LEAST(r.cost, r.held);
          v_balance := v_balance - v_charge;
          v_released := v_released + r.held;
          v_months := v_months || r.month;
          v_month_released := v_month_released || r.held;
          v_month_charged := v_month_charged || v_charge;
          IF v_charge > 0 THEN
            v_ledger_requests := v_ledger_requests || r.request;
            v_ledger_amounts := v_ledger_amounts || -v_charge;
            v_ledger_balances := v_ledger_balances || v_balance;
          END IF;
          item := r.i; charged := v_charge;
          RETURN NEXT;
        END LOOP;
        IF v_account IS NOT NULL THEN
          PERFORM billing_apply_charges(v_account, v_balance, v_released, v_months, v_month_released, v_month_charged,
                                        v_ledger_requests, v_ledger_amounts, v_ledger_balances);
        END IF;
      END
      $$`);

    // One account's settled holds in a batch: its row and monthly counters once, and its ledger entries.
    await q.query(`
      CREATE FUNCTION billing_apply_charges(
        p_account uuid, p_balance bigint, p_released bigint, p_months date[], p_month_released bigint[],
        p_month_charged bigint[], p_ledger_requests text[], p_ledger_amounts bigint[], p_ledger_balances bigint[])
      RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        IF p_balance IS NULL THEN RETURN; END IF;  -- only requests that settled on their own
        UPDATE accounts SET reserved_micros = reserved_micros - p_released, balance_micros = p_balance WHERE id = p_account;
        UPDATE monthly_counters c SET held_micros = c.held_micros - m.released, spend_micros = c.spend_micros + m.charged
          FROM (SELECT month, sum(released)::bigint AS released, sum(charged)::bigint AS charged
                  FROM unnest(p_months, p_month_released, p_month_charged) AS u(month, released, charged)
                 GROUP BY month) m
         WHERE c.account_id = p_account AND c.month = m.month;
        INSERT INTO ledger_entries (account_id, kind, amount_micros, balance_after_micros, request_id)
          SELECT p_account, 'charge', l.amount, l.balance, l.request
            FROM unnest(p_ledger_requests, p_ledger_amounts, p_ledger_balances) WITH ORDINALITY AS l(request, amount, balance, n)
           ORDER BY l.n;
      END
      $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS billing_apply_charges(uuid, bigint, bigint, date[], bigint[], bigint[], text[], bigint[], bigint[])`);
    await q.query(`DROP FUNCTION IF EXISTS billing_settle_batch(jsonb)`);
    await q.query(`DROP FUNCTION IF EXISTS billing_apply_holds(uuid, date, bigint, text[], bigint[], timestamptz[])`);
    await q.query(`DROP FUNCTION IF EXISTS billing_reserve_batch(jsonb)`);
    await q.query(`DROP FUNCTION IF EXISTS billing_reserve_decide(bigint, bigint, bigint, bigint, bigint, integer, bigint, bigint)`);
  }
}
