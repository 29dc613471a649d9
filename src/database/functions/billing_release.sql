-- Deletes a hold (a budget lease given back) and gives its amount back; false when it is gone already
-- (released, or swept).
CREATE OR REPLACE FUNCTION billing_release(p_account uuid, p_request text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE v_amount bigint; v_month date;
BEGIN
  DELETE FROM holds h WHERE h.request_id = p_request AND h.account_id = p_account
    RETURNING h.amount_micros, h.month INTO v_amount, v_month;
  IF v_amount IS NULL THEN RETURN false; END IF;
  PERFORM billing_move_held(p_account, v_month, -v_amount);
  RETURN true;
END
$$;
