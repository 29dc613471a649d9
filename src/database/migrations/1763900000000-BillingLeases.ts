import { MigrationInterface, QueryRunner } from 'typeorm';
import { BillingBatches1763890000000 } from './1763890000000-BillingBatches';

/**
 * Budget leases (docs/billing.md): each replica holds, per account, one hold row of its own (its
 * lease, `request_id` 'lease:…') and places its requests' worst cases inside it in memory. These
 * functions grow a lease for requests that do not fit, and charge settled requests to it. A lease
 * row is a hold like any other (counted in reserved_micros and the month's held_micros, released by
 * billing_release, swept when its process dies), so the invariants of billing_reserve hold as before.
 *
 * Lock order stays hold rows (ascending id) → account rows (ascending id) → monthly counters.
 * Item numbers are 0-based positions in the input array.
 */
export class BillingLeases1763900000000 implements MigrationInterface {
  name = 'BillingLeases1763900000000';

  async up(q: QueryRunner): Promise<void> {
    // The existing lease rows of a batch's items, locked first (ascending id) as every hold writer does.
    await q.query(`
      CREATE FUNCTION billing_lock_leases(p_items jsonb) RETURNS TABLE (lease text, month date)
      LANGUAGE sql AS $$
        SELECT h.request_id, h.month FROM holds h
         WHERE h.request_id IN (SELECT e.v->>'lease' FROM jsonb_array_elements(p_items) AS e(v))
         ORDER BY h.id FOR UPDATE
      $$`);

    // Items: account, lease, known (its row was created), claimed (the lease's free part, given up to
    // this request), prompt, requested, max_output, in_picos, out_picos, ttl_ms, spare (holds of spare
    // room wanted), plenty (spare room only while the account could still afford this many such holds).
    // The decision is billing_reserve's, on what is available plus the claimed part. lease_delta is
    // how much the lease row grew (negative: it gave the claimed part back).
    await q.query(`
      CREATE FUNCTION billing_lease_grow_batch(p_items jsonb)
      RETURNS TABLE (item integer, outcome text, hold_micros bigint, allowance bigint, capped boolean,
                     available_micros bigint, limit_micros bigint, limit_remaining_micros bigint,
                     affordable_tokens bigint, needed_micros bigint, lease_delta bigint, plenty boolean)
      LANGUAGE plpgsql AS $$
      DECLARE
        v_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
        r record; d record;
        v_leases text[]; v_lease_months date[];
        v_account uuid;
        v_balance bigint; v_reserved bigint; v_limit bigint; v_spend bigint; v_held bigint; v_added bigint;
        v_claimed bigint; v_plenty boolean; v_delta bigint;
        v_grown text[] := '{}'; v_deltas bigint[] := '{}'; v_accounts uuid[] := '{}'; v_expiries timestamptz[] := '{}';
      BEGIN
        SELECT COALESCE(array_agg(l.lease), '{}'), COALESCE(array_agg(l.month), '{}') INTO v_leases, v_lease_months
          FROM billing_lock_leases(p_items) l;

        FOR r IN
          SELECT (e.ord - 1)::integer AS i, (e.v->>'account')::uuid AS account, e.v, l.month AS lease_month
            FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(v, ord)
            LEFT JOIN unnest(v_leases, v_lease_months) AS l(lease, month) ON l.lease = e.v->>'lease'
           ORDER BY 2, e.ord
        LOOP
          IF v_account IS DISTINCT FROM r.account THEN
            IF v_account IS NOT NULL THEN
              UPDATE accounts SET reserved_micros = reserved_micros + v_added WHERE id = v_account;
              UPDATE monthly_counters SET held_micros = held_micros + v_added WHERE account_id = v_account AND month = v_month;
            END IF;
            v_account := r.account;
            SELECT a.balance_micros, a.reserved_micros, a.monthly_limit_micros INTO v_balance, v_reserved, v_limit
              FROM accounts a WHERE a.id = v_account FOR UPDATE;
            IF NOT FOUND THEN RAISE EXCEPTION 'billing_lease_grow_batch: no account %', v_account; END IF;
            SELECT c.spend_micros, c.held_micros INTO v_spend, v_held
              FROM monthly_counters c WHERE c.account_id = v_account AND c.month = v_month;
            IF NOT FOUND THEN
              INSERT INTO monthly_counters (account_id, month) VALUES (v_account, v_month) ON CONFLICT DO NOTHING;
              v_spend := 0; v_held := 0;
            END IF;
            v_added := 0;
          END IF;

          -- Swept while its process still used it, or taken out last month: the process starts a new one.
          IF (r.lease_month IS NULL AND (r.v->>'known')::boolean) OR r.lease_month <> v_month THEN
            RETURN QUERY SELECT r.i, CASE WHEN r.lease_month IS NULL THEN 'lease_gone' ELSE 'lease_stale' END,
                                0::bigint, 0::bigint, false, 0::bigint, NULL::bigint, NULL::bigint, 0::bigint, 0::bigint, 0::bigint, false;
            CONTINUE;
          END IF;

          v_claimed := (r.v->>'claimed')::bigint;
          SELECT * INTO d FROM billing_reserve_decide(
            v_balance - v_reserved - v_added + v_claimed, v_limit,
            CASE WHEN v_limit IS NULL THEN NULL ELSE v_limit - v_spend - v_held - v_added + v_claimed END,
            (r.v->>'prompt')::bigint, (r.v->>'requested')::bigint, (r.v->>'max_output')::integer,
            (r.v->>'in_picos')::bigint, (r.v->>'out_picos')::bigint);
          IF d.outcome = 'ok' THEN
            v_plenty := LEAST(d.available_micros, COALESCE(d.limit_remaining_micros, d.available_micros))::numeric
                        >= (r.v->>'plenty')::numeric * d.hold_micros;
            v_delta := d.hold_micros - v_claimed
                       + CASE WHEN v_plenty THEN (r.v->>'spare')::bigint * d.hold_micros ELSE 0 END;
          ELSE
            v_plenty := false;
            v_delta := -v_claimed;
          END IF;
          v_added := v_added + v_delta;
          v_grown := v_grown || (r.v->>'lease');
          v_deltas := v_deltas || v_delta;
          v_accounts := v_accounts || r.account;
          v_expiries := v_expiries || (now() + (r.v->>'ttl_ms')::integer * interval '1 millisecond');
          RETURN QUERY SELECT r.i, d.outcome, d.hold_micros, d.allowance, d.capped, d.available_micros, d.limit_micros,
                              d.limit_remaining_micros, d.affordable_tokens, d.needed_micros, v_delta, v_plenty;
        END LOOP;
        IF v_account IS NOT NULL THEN
          UPDATE accounts SET reserved_micros = reserved_micros + v_added WHERE id = v_account;
          UPDATE monthly_counters SET held_micros = held_micros + v_added WHERE account_id = v_account AND month = v_month;
        END IF;

        UPDATE holds h SET amount_micros = h.amount_micros + g.delta, expires_at = g.expires
          FROM (SELECT u.lease, sum(u.delta)::bigint AS delta, max(u.expires) AS expires
                  FROM unnest(v_grown, v_deltas, v_expiries) AS u(lease, delta, expires) GROUP BY u.lease) g
         WHERE h.request_id = g.lease AND g.lease = ANY(v_leases);
        -- A new lease's row is created by the first grow that puts something in it.
        INSERT INTO holds (account_id, request_id, amount_micros, month, expires_at)
          SELECT min(g.account::text)::uuid, g.lease, sum(g.delta), v_month, max(g.expires)
            FROM unnest(v_accounts, v_grown, v_deltas, v_expiries) AS g(account, lease, delta, expires)
           WHERE NOT g.lease = ANY(v_leases)
           GROUP BY g.lease HAVING sum(g.delta) <> 0;
      END
      $$`);

    // Items: account, lease, request, hold (the request's part of the lease), release_rest (give the
    // part not charged back to the account rather than keep it in the lease), prompt, completion,
    // in_picos, out_picos. The charge is at most the hold, as in billing_settle; the lease row, the
    // account row and the lease month's counter are written once per call. A request whose lease is
    // gone (swept) settles through billing_settle, which charges only what is still free; its
    // `released` is null.
    await q.query(`
      CREATE FUNCTION billing_lease_settle_batch(p_items jsonb)
      RETURNS TABLE (item integer, charged bigint, released bigint)
      LANGUAGE plpgsql AS $$
      DECLARE
        r record;
        v_leases text[]; v_lease_months date[];
        v_account uuid; v_balance bigint; v_charge bigint; v_release bigint;
        v_released bigint; v_months date[]; v_month_released bigint[]; v_month_charged bigint[];
        v_ledger_requests text[]; v_ledger_amounts bigint[]; v_ledger_balances bigint[];
        v_shrunk text[] := '{}'; v_shrinks bigint[] := '{}';
      BEGIN
        SELECT COALESCE(array_agg(l.lease), '{}'), COALESCE(array_agg(l.month), '{}') INTO v_leases, v_lease_months
          FROM billing_lock_leases(p_items) l;

        FOR r IN
          SELECT (e.ord - 1)::integer AS i, (e.v->>'account')::uuid AS account, e.v->>'request' AS request,
                 e.v->>'lease' AS lease, (e.v->>'hold')::bigint AS held, (e.v->>'release_rest')::boolean AS release_rest,
                 billing_cost_micros((e.v->>'prompt')::bigint, (e.v->>'completion')::bigint,
                                     (e.v->>'in_picos')::bigint, (e.v->>'out_picos')::bigint) AS cost,
                 l.month
            FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(v, ord)
            LEFT JOIN unnest(v_leases, v_lease_months) AS l(lease, month) ON l.lease = e.v->>'lease'
           -- Per account: the requests whose lease is gone first (they settle on their own), then the rest.
           ORDER BY 2, (l.month IS NOT NULL), e.ord
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

          IF r.month IS NULL THEN
            RETURN QUERY SELECT r.i, s.charged, NULL::bigint FROM billing_settle(
              r.account, r.request, ((p_items -> r.i)->>'prompt')::bigint, ((p_items -> r.i)->>'completion')::bigint,
              ((p_items -> r.i)->>'in_picos')::bigint, ((p_items -> r.i)->>'out_picos')::bigint) s;
            CONTINUE;
          END IF;
          IF v_balance IS NULL THEN
            SELECT a.balance_micros INTO v_balance FROM accounts a WHERE a.id = v_account;
          END IF;
          -- Never more than was held: the hold was affordable, so the balance cannot go negative.
          v_charge := LEAST(r.cost, r.held);
          v_release := CASE WHEN r.release_rest THEN r.held ELSE v_charge END;
          v_balance := v_balance - v_charge;
          v_released := v_released + v_release;
          v_months := v_months || r.month;
          v_month_released := v_month_released || v_release;
          v_month_charged := v_month_charged || v_charge;
          v_shrunk := v_shrunk || r.lease;
          v_shrinks := v_shrinks || v_release;
          IF v_charge > 0 THEN
            v_ledger_requests := v_ledger_requests || r.request;
            v_ledger_amounts := v_ledger_amounts || -v_charge;
            v_ledger_balances := v_ledger_balances || v_balance;
          END IF;
          RETURN QUERY SELECT r.i, v_charge, v_release;
        END LOOP;
        IF v_account IS NOT NULL THEN
          PERFORM billing_apply_charges(v_account, v_balance, v_released, v_months, v_month_released, v_month_charged,
                                        v_ledger_requests, v_ledger_amounts, v_ledger_balances);
        END IF;

        UPDATE holds h SET amount_micros = h.amount_micros - s.amount
          FROM (SELECT lease, sum(amount)::bigint AS amount FROM unnest(v_shrunk, v_shrinks) AS u(lease, amount) GROUP BY lease) s
         WHERE h.request_id = s.lease;
      END
      $$`);

    // Per-request holds and their batch functions are replaced by leases.
    await q.query(`DROP FUNCTION billing_settle_batch(jsonb)`);
    await q.query(`DROP FUNCTION billing_reserve_batch(jsonb)`);
    await q.query(`DROP FUNCTION billing_apply_holds(uuid, date, bigint, text[], bigint[], timestamptz[])`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS billing_lease_settle_batch(jsonb)`);
    await q.query(`DROP FUNCTION IF EXISTS billing_lease_grow_batch(jsonb)`);
    await q.query(`DROP FUNCTION IF EXISTS billing_lock_leases(jsonb)`);
    // The previous migration's functions as it left them, the per-request batch functions included.
    const previous = new BillingBatches1763890000000();
    await previous.down(q);
    await previous.up(q);
  }
}
