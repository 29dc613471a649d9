-- Grows budget leases, one item per request that did not fit in its replica's lease (docs/billing.md,
-- "Budget leases"). Items: account, lease, budget (the key budget of a key's own lease, null for the
-- account's shared lease), known (its row was created), claimed (the lease's free part, given up to this
-- request), prompt, requested, max_output, in_picos, out_picos, ttl_ms, spare (holds of spare room wanted),
-- plenty (spare room only while the account could still afford this many such holds).
-- Per account and key budget, in input order: the decision is billing_reserve_decide's, on what the account
-- has available plus the claimed part, after the items before it; in a key's own lease also on what the
-- key's limit still allows plus the claimed part (key_limit_reached only when credits and the account's
-- limit cover the request: the first of the three that cannot cover it is named). lease_delta is how much
-- the lease row grew (negative: it gave the claimed part back). Lock order: lease rows, account rows
-- (ascending id), monthly counters, key counters. Item numbers are 0-based positions in the input array.
CREATE OR REPLACE FUNCTION billing_lease_grow_batch(p_items jsonb)
RETURNS TABLE (item integer, outcome text, hold_micros bigint, allowance bigint, capped boolean,
               available_micros bigint, limit_micros bigint, limit_remaining_micros bigint,
               affordable_tokens bigint, needed_micros bigint, lease_delta bigint, plenty boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
  r record; d record; f record; k record;
  v_leases text[]; v_lease_months date[];
  v_account uuid; v_added bigint; v_budget uuid; v_key_added bigint := 0; v_first boolean := true;
  v_key_limit bigint; v_key_remaining bigint;
  v_claimed bigint; v_plenty boolean; v_delta bigint; v_room bigint;
  v_grown text[] := '{}'; v_deltas bigint[] := '{}'; v_accounts uuid[] := '{}'; v_expiries timestamptz[] := '{}';
  v_budgets uuid[] := '{}';
BEGIN
  SELECT COALESCE(array_agg(l.lease), '{}'), COALESCE(array_agg(l.month), '{}') INTO v_leases, v_lease_months
    FROM billing_lock_leases(p_items) l;

  FOR r IN
    SELECT (e.ord - 1)::integer AS i, (e.v->>'account')::uuid AS account, (e.v->>'budget')::uuid AS budget, e.v,
           l.month AS lease_month
      FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(v, ord)
      LEFT JOIN unnest(v_leases, v_lease_months) AS l(lease, month) ON l.lease = e.v->>'lease'
     ORDER BY 2, 3 NULLS FIRST, e.ord
  LOOP
    IF v_first OR v_account IS DISTINCT FROM r.account OR v_budget IS DISTINCT FROM r.budget THEN
      PERFORM billing_move_key_held(v_budget, v_month, v_key_added);
      IF v_account IS DISTINCT FROM r.account THEN
        IF v_account IS NOT NULL THEN PERFORM billing_move_held(v_account, v_month, v_added); END IF;
        v_account := r.account;
        SELECT * INTO f FROM billing_account_figures(v_account, v_month);
        v_added := 0;
      END IF;
      v_first := false;
      v_budget := r.budget;
      v_key_added := 0;
      v_key_limit := NULL; v_key_remaining := NULL;
      IF v_budget IS NOT NULL THEN
        SELECT kf.limit_micros, kf.limit_remaining_micros INTO v_key_limit, v_key_remaining
          FROM billing_key_figures(v_account, v_budget, v_month) kf;
      END IF;
    END IF;

    -- Swept while its process still used it, or taken out last month: the process starts a new one.
    IF (r.lease_month IS NULL AND (r.v->>'known')::boolean) OR r.lease_month <> v_month THEN
      RETURN QUERY SELECT r.i, CASE WHEN r.lease_month IS NULL THEN 'lease_gone' ELSE 'lease_stale' END,
                          0::bigint, 0::bigint, false, 0::bigint, NULL::bigint, NULL::bigint, 0::bigint, 0::bigint, 0::bigint, false;
      CONTINUE;
    END IF;

    v_claimed := (r.v->>'claimed')::bigint;
    SELECT * INTO d FROM billing_reserve_decide(
      f.available_micros - v_added + v_claimed, f.limit_micros, f.limit_remaining_micros - v_added + v_claimed,
      (r.v->>'prompt')::bigint, (r.v->>'requested')::bigint, (r.v->>'max_output')::integer,
      (r.v->>'in_picos')::bigint, (r.v->>'out_picos')::bigint);
    -- The key's limit, as a budget of its own: the smaller allowance wins; it is named only when the others cover.
    IF v_key_limit IS NOT NULL THEN
      SELECT * INTO k FROM billing_reserve_decide(
        v_key_remaining - v_key_added + v_claimed, NULL, NULL,
        (r.v->>'prompt')::bigint, (r.v->>'requested')::bigint, (r.v->>'max_output')::integer,
        (r.v->>'in_picos')::bigint, (r.v->>'out_picos')::bigint);
      IF d.outcome <> 'ok' THEN
        d.affordable_tokens := LEAST(d.affordable_tokens, k.affordable_tokens);
      ELSIF k.outcome <> 'ok' THEN
        d.outcome := 'key_limit_reached'; d.hold_micros := 0; d.allowance := 0; d.capped := false;
        d.limit_micros := v_key_limit; d.limit_remaining_micros := v_key_remaining - v_key_added + v_claimed;
        d.affordable_tokens := k.affordable_tokens; d.needed_micros := k.needed_micros;
      ELSIF k.allowance < d.allowance THEN
        d.available_micros := d.available_micros + d.hold_micros - k.hold_micros;
        d.limit_remaining_micros := d.limit_remaining_micros + d.hold_micros - k.hold_micros;
        d.hold_micros := k.hold_micros; d.allowance := k.allowance; d.capped := k.capped; d.needed_micros := k.needed_micros;
      END IF;
    END IF;
    IF d.outcome = 'ok' THEN
      v_room := LEAST(d.available_micros, COALESCE(d.limit_remaining_micros, d.available_micros));
      IF v_key_limit IS NOT NULL THEN
        v_room := LEAST(v_room, v_key_remaining - v_key_added + v_claimed - d.hold_micros);
      END IF;
      v_plenty := v_room::numeric >= (r.v->>'plenty')::numeric * d.hold_micros;
      v_delta := d.hold_micros - v_claimed
                 + CASE WHEN v_plenty THEN (r.v->>'spare')::bigint * d.hold_micros ELSE 0 END;
    ELSE
      v_plenty := false;
      v_delta := -v_claimed;
    END IF;
    v_added := v_added + v_delta;
    IF v_budget IS NOT NULL THEN v_key_added := v_key_added + v_delta; END IF;
    v_grown := v_grown || (r.v->>'lease');
    v_budgets := v_budgets || v_budget;
    v_deltas := v_deltas || v_delta;
    v_accounts := v_accounts || r.account;
    v_expiries := v_expiries || (now() + (r.v->>'ttl_ms')::integer * interval '1 millisecond');
    RETURN QUERY SELECT r.i, d.outcome, d.hold_micros, d.allowance, d.capped, d.available_micros, d.limit_micros,
                        d.limit_remaining_micros, d.affordable_tokens, d.needed_micros, v_delta, v_plenty;
  END LOOP;
  PERFORM billing_move_key_held(v_budget, v_month, v_key_added);
  IF v_account IS NOT NULL THEN PERFORM billing_move_held(v_account, v_month, v_added); END IF;

  UPDATE holds h SET amount_micros = h.amount_micros + g.delta, expires_at = g.expires
    FROM (SELECT u.lease, sum(u.delta)::bigint AS delta, max(u.expires) AS expires
            FROM unnest(v_grown, v_deltas, v_expiries) AS u(lease, delta, expires) GROUP BY u.lease) g
   WHERE h.request_id = g.lease AND g.lease = ANY(v_leases);
  -- A new lease's row is created by the first grow that puts something in it.
  INSERT INTO holds (account_id, request_id, amount_micros, month, expires_at, budget_id)
    SELECT min(g.account::text)::uuid, g.lease, sum(g.delta), v_month, max(g.expires), min(g.budget::text)::uuid
      FROM unnest(v_accounts, v_grown, v_deltas, v_expiries, v_budgets) AS g(account, lease, delta, expires, budget)
     WHERE NOT g.lease = ANY(v_leases)
     GROUP BY g.lease HAVING sum(g.delta) <> 0;
END
$$;
