-- Charges settled requests to their budget leases (docs/billing.md, "Budget leases"). Items: account, lease,
-- request, hold (the request's part of the lease), release_rest (give the part not charged back to the
-- account rather than keep it in the lease), cost (micro-USD, computed by the application from the request's
-- usage: requestCost, src/billing/request-cost.ts), budget (the key's budget, whose month spend counts the
-- charge; null: none), key_lease (the hold is in that key's own lease, so it is counted in the key's held
-- amount too). The charge is the cost, at most the hold: the hold was affordable, so the balance cannot go
-- negative. The lease rows, the account
-- rows and the lease month's counters are written once per call. A request whose lease is gone (swept)
-- settles through billing_settle, which charges only what is still free (the key's limit included); its
-- `released` is null. Lock order: lease rows, account rows (ascending id), monthly counters, key counters.
-- Each account's alerts are written after its charges (billing_raise_alerts), in this transaction.
-- Item numbers are 0-based.
CREATE OR REPLACE FUNCTION billing_lease_settle_batch(p_items jsonb)
RETURNS TABLE (item integer, charged bigint, released bigint)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  v_leases text[]; v_lease_months date[];
  v_account uuid; v_balance bigint; v_charge bigint; v_release bigint;
  v_released bigint; v_months date[]; v_month_released bigint[]; v_month_charged bigint[];
  v_ledger_requests text[]; v_ledger_amounts bigint[]; v_ledger_balances bigint[];
  v_shrunk text[] := '{}'; v_shrinks bigint[] := '{}';
  v_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
  v_key_budgets uuid[]; v_key_months date[]; v_key_released bigint[]; v_key_charged bigint[];
  v_key_limit bigint; v_key_remaining bigint; v_swept_cost bigint; v_swept_charge bigint;
BEGIN
  SELECT COALESCE(array_agg(l.lease), '{}'), COALESCE(array_agg(l.month), '{}') INTO v_leases, v_lease_months
    FROM billing_lock_leases(p_items) l;

  FOR r IN
    SELECT (e.ord - 1)::integer AS i, (e.v->>'account')::uuid AS account, e.v->>'request' AS request,
           e.v->>'lease' AS lease, (e.v->>'hold')::bigint AS held, (e.v->>'release_rest')::boolean AS release_rest,
           (e.v->>'budget')::uuid AS budget, COALESCE((e.v->>'key_lease')::boolean, false) AS key_lease,
           (e.v->>'cost')::bigint AS cost,
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
        PERFORM billing_apply_key_charges(v_account, v_key_budgets, v_key_months, v_key_released, v_key_charged);
        PERFORM billing_raise_alerts(v_account, v_months || v_month, v_key_budgets, v_key_months);
      END IF;
      v_account := r.account;
      PERFORM 1 FROM accounts a WHERE a.id = v_account FOR UPDATE;
      v_balance := NULL; v_released := 0; v_months := '{}'; v_month_released := '{}'; v_month_charged := '{}';
      v_ledger_requests := '{}'; v_ledger_amounts := '{}'; v_ledger_balances := '{}';
      v_key_budgets := '{}'; v_key_months := '{}'; v_key_released := '{}'; v_key_charged := '{}';
    END IF;

    IF r.month IS NULL THEN
      v_swept_cost := r.cost;
      IF r.budget IS NOT NULL THEN
        SELECT kf.limit_micros, kf.limit_remaining_micros INTO v_key_limit, v_key_remaining
          FROM billing_key_figures(r.account, r.budget, v_month) kf;
        -- Charges of this batch not yet written to the key's counter count too.
        SELECT v_key_remaining - COALESCE(sum(c), 0) INTO v_key_remaining
          FROM unnest(v_key_budgets, v_key_months, v_key_charged) AS u(b, m, c) WHERE b = r.budget AND m = v_month;
        IF v_key_limit IS NOT NULL THEN v_swept_cost := GREATEST(0, LEAST(v_swept_cost, v_key_remaining)); END IF;
      END IF;
      SELECT s.charged INTO v_swept_charge FROM billing_settle(r.account, r.request, v_swept_cost) s;
      v_key_budgets := v_key_budgets || r.budget;
      v_key_months := v_key_months || v_month;
      v_key_released := v_key_released || 0::bigint;
      v_key_charged := v_key_charged || v_swept_charge;
      RETURN QUERY SELECT r.i, v_swept_charge, NULL::bigint;
      CONTINUE;
    END IF;
    IF v_balance IS NULL THEN
      SELECT a.balance_micros INTO v_balance FROM accounts a WHERE a.id = v_account;
    END IF;
    v_charge := LEAST(r.cost, r.held);
    v_release := CASE WHEN r.release_rest THEN r.held ELSE v_charge END;
    v_balance := v_balance - v_charge;
    v_released := v_released + v_release;
    v_months := v_months || r.month;
    v_month_released := v_month_released || v_release;
    v_month_charged := v_month_charged || v_charge;
    v_shrunk := v_shrunk || r.lease;
    v_shrinks := v_shrinks || v_release;
    v_key_budgets := v_key_budgets || r.budget;
    v_key_months := v_key_months || r.month;
    v_key_released := v_key_released || CASE WHEN r.key_lease THEN v_release ELSE 0 END;
    v_key_charged := v_key_charged || v_charge;
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
    PERFORM billing_apply_key_charges(v_account, v_key_budgets, v_key_months, v_key_released, v_key_charged);
    PERFORM billing_raise_alerts(v_account, v_months || v_month, v_key_budgets, v_key_months);
  END IF;

  UPDATE holds h SET amount_micros = h.amount_micros - s.amount
    FROM (SELECT lease, sum(amount)::bigint AS amount FROM unnest(v_shrunk, v_shrinks) AS u(lease, amount) GROUP BY lease) s
   WHERE h.request_id = s.lease;
END
$$;
