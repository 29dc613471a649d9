-- One account's settlements in a batch, per key budget (billing_lease_settle_batch): each charge is added to the
-- spend of its key budget's month (every key's, so its month spend is known when a limit is set later), and the
-- holds of keys' own budget leases given back (p_released: 0 for a request held in the account's shared lease).
CREATE OR REPLACE FUNCTION billing_apply_key_charges(
  p_account uuid, p_budgets uuid[], p_months date[], p_released bigint[], p_charged bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO key_monthly_counters (budget_id, month, account_id)
    SELECT DISTINCT u.budget, u.month, p_account FROM unnest(p_budgets, p_months) AS u(budget, month)
     WHERE u.budget IS NOT NULL
    ON CONFLICT DO NOTHING;
  UPDATE key_monthly_counters c SET held_micros = c.held_micros - m.released, spend_micros = c.spend_micros + m.charged
    FROM (SELECT budget, month, sum(released)::bigint AS released, sum(charged)::bigint AS charged
            FROM unnest(p_budgets, p_months, p_released, p_charged) AS u(budget, month, released, charged)
           WHERE budget IS NOT NULL GROUP BY budget, month) m
   WHERE c.budget_id = m.budget AND c.month = m.month;
END
$$;
