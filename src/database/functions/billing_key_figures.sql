-- A key budget's figures for a decision (docs/billing.md, "Key limits"), read under its account's row lock: the
-- monthly limit of its keys (a rotated key and its successor share the budget, and PATCH keeps their limit
-- equal) and what it still allows in p_month, spend and holds counted (null: no limit). Creates the month's
-- counter on first use.
CREATE OR REPLACE FUNCTION billing_key_figures(p_account uuid, p_budget uuid, p_month date)
RETURNS TABLE (limit_micros bigint, limit_remaining_micros bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_limit bigint; v_spend bigint; v_held bigint;
BEGIN
  SELECT k.monthly_limit_micros INTO v_limit FROM api_keys k WHERE k.budget_id = p_budget ORDER BY k.created_at DESC LIMIT 1;
  SELECT c.spend_micros, c.held_micros INTO v_spend, v_held
    FROM key_monthly_counters c WHERE c.budget_id = p_budget AND c.month = p_month;
  IF NOT FOUND THEN
    INSERT INTO key_monthly_counters (budget_id, month, account_id) VALUES (p_budget, p_month, p_account) ON CONFLICT DO NOTHING;
    v_spend := 0; v_held := 0;
  END IF;
  RETURN QUERY SELECT v_limit, v_limit - v_spend - v_held;
END
$$;
