-- Deletes a hold (a budget lease given back) and gives its amount back, to its key's budget too when it is a
-- key's own lease; false when it is gone already (released, or swept).
CREATE OR REPLACE FUNCTION billing_release(p_account uuid, p_request text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE v_amount bigint; v_month date; v_budget uuid;
BEGIN
  DELETE FROM holds h WHERE h.request_id = p_request AND h.account_id = p_account
    RETURNING h.amount_micros, h.month, h.budget_id INTO v_amount, v_month, v_budget;
  IF v_amount IS NULL THEN RETURN false; END IF;
  PERFORM billing_move_held(p_account, v_month, -v_amount);
  PERFORM billing_move_key_held(v_budget, v_month, -v_amount);
  RETURN true;
END
$$;
