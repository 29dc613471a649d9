-- Charges settled requests to their budget leases (docs/billing.md, "Budget leases"). Items: account, lease,
-- request, hold (the request's part of the lease), release_rest (give the part not charged back to the
-- account rather than keep it in the lease), cost (micro-USD, computed by the application from the request's
-- usage: requestCost, src/billing/request-cost.ts). The charge is the cost, at most the hold: the hold was
-- affordable, so the balance cannot go negative. The lease rows, the account
-- rows and the lease month's counters are written once per call. A request whose lease is gone (swept)
-- settles through billing_settle, which charges only what is still free; its `released` is null.
-- Lock order: lease rows, account rows (ascending id), monthly counters. Item numbers are 0-based.
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
BEGIN
  SELECT COALESCE(array_agg(l.lease), '{}'), COALESCE(array_agg(l.month), '{}') INTO v_leases, v_lease_months
    FROM billing_lock_leases(p_items) l;

  FOR r IN
    SELECT (e.ord - 1)::integer AS i, (e.v->>'account')::uuid AS account, e.v->>'request' AS request,
           e.v->>'lease' AS lease, (e.v->>'hold')::bigint AS held, (e.v->>'release_rest')::boolean AS release_rest,
           (e.v->>'cost')::bigint AS cost, l.month
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
      RETURN QUERY SELECT r.i, s.charged, NULL::bigint FROM billing_settle(r.account, r.request, r.cost) s;
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
$$;
