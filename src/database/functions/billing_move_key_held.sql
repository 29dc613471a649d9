-- Holds of a key's own budget lease taken (p_delta > 0) or given back (p_delta < 0): the held amount of the key
-- budget's month, beside the account's (billing_move_held). The counter exists: the grow that took the hold
-- created it (billing_key_figures).
CREATE OR REPLACE FUNCTION billing_move_key_held(p_budget uuid, p_month date, p_delta bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF p_budget IS NULL OR p_delta = 0 THEN RETURN; END IF;
  UPDATE key_monthly_counters SET held_micros = held_micros + p_delta WHERE budget_id = p_budget AND month = p_month;
END
$$;
