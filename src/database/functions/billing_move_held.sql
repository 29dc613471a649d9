-- Holds taken (p_delta > 0) or given back (p_delta < 0): the account's reserved amount and the held amount of
-- the holds' month move together. Every writer of holds goes through here, except a settlement, which moves
-- them together with the charge (billing_apply_charges).
CREATE OR REPLACE FUNCTION billing_move_held(p_account uuid, p_month date, p_delta bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE accounts SET reserved_micros = reserved_micros + p_delta WHERE id = p_account;
  UPDATE monthly_counters SET held_micros = held_micros + p_delta WHERE account_id = p_account AND month = p_month;
END
$$;
