-- A settlement whose budget lease is gone (swept while its request still ran, docs/billing.md "Hold
-- sweeper"), called by billing_lease_settle_batch: the hold no longer reserves anything, so it charges
-- only what is still free — min(cost, available, what the spending limit still allows) — to this month.
-- A request charged already is charged nothing. p_cost: the request's cost in micro-USD.
CREATE OR REPLACE FUNCTION billing_settle(p_account uuid, p_request text, p_cost bigint)
RETURNS TABLE (charged bigint, balance_after bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
  f record; v_charge bigint; v_balance bigint;
BEGIN
  SELECT * INTO f FROM billing_account_figures(p_account, v_month);
  IF EXISTS (SELECT 1 FROM ledger_entries l WHERE l.request_id = p_request AND l.kind = 'charge') THEN
    RETURN QUERY SELECT 0::bigint, a.balance_micros FROM accounts a WHERE a.id = p_account;
    RETURN;
  END IF;
  v_charge := GREATEST(0, LEAST(p_cost, f.available_micros, COALESCE(f.limit_remaining_micros, p_cost)));
  UPDATE accounts SET balance_micros = balance_micros - v_charge
    WHERE id = p_account RETURNING balance_micros INTO v_balance;
  UPDATE monthly_counters SET spend_micros = spend_micros + v_charge WHERE account_id = p_account AND month = v_month;
  IF v_charge > 0 THEN
    INSERT INTO ledger_entries (account_id, kind, amount_micros, balance_after_micros, request_id)
      VALUES (p_account, 'charge', -v_charge, v_balance, p_request);
  END IF;
  RETURN QUERY SELECT v_charge, v_balance;
END
$$;
