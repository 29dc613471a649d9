-- An account's figures for a decision, read under its row lock: what it can still hold (balance − reserved),
-- its spending limit, and what the limit still allows in p_month (spend and holds counted; null: no limit).
-- Creates the month's counter on first use.
CREATE OR REPLACE FUNCTION billing_account_figures(p_account uuid, p_month date)
RETURNS TABLE (available_micros bigint, limit_micros bigint, limit_remaining_micros bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_balance bigint; v_reserved bigint; v_limit bigint; v_spend bigint; v_held bigint;
BEGIN
  SELECT a.balance_micros, a.reserved_micros, a.monthly_limit_micros INTO v_balance, v_reserved, v_limit
    FROM accounts a WHERE a.id = p_account FOR UPDATE;
  IF NOT FOUND THEN RAISE EXCEPTION 'billing: no account %', p_account; END IF;
  SELECT c.spend_micros, c.held_micros INTO v_spend, v_held
    FROM monthly_counters c WHERE c.account_id = p_account AND c.month = p_month;
  IF NOT FOUND THEN
    INSERT INTO monthly_counters (account_id, month) VALUES (p_account, p_month) ON CONFLICT DO NOTHING;
    v_spend := 0; v_held := 0;
  END IF;
  RETURN QUERY SELECT v_balance - v_reserved, v_limit, v_limit - v_spend - v_held;
END
$$;
