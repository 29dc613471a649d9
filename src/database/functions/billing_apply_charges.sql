-- One account's settlements in a batch (billing_lease_settle_batch): its row and monthly counters written
-- once — the holds' amounts given back, the charges taken from the balance and added to the spend of each
-- hold's month — and its ledger entries, with their running balance_after. p_balance is null when all its
-- requests settled on their own (billing_settle).
CREATE OR REPLACE FUNCTION billing_apply_charges(
  p_account uuid, p_balance bigint, p_released bigint, p_months date[], p_month_released bigint[],
  p_month_charged bigint[], p_ledger_requests text[], p_ledger_amounts bigint[], p_ledger_balances bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF p_balance IS NULL THEN RETURN; END IF;
  UPDATE accounts SET reserved_micros = reserved_micros - p_released, balance_micros = p_balance WHERE id = p_account;
  UPDATE monthly_counters c SET held_micros = c.held_micros - m.released, spend_micros = c.spend_micros + m.charged
    FROM (SELECT month, sum(released)::bigint AS released, sum(charged)::bigint AS charged
            FROM unnest(p_months, p_month_released, p_month_charged) AS u(month, released, charged)
           GROUP BY month) m
   WHERE c.account_id = p_account AND c.month = m.month;
  INSERT INTO ledger_entries (account_id, kind, amount_micros, balance_after_micros, request_id)
    SELECT p_account, 'charge', l.amount, l.balance, l.request
      FROM unnest(p_ledger_requests, p_ledger_amounts, p_ledger_balances) WITH ORDINALITY AS l(request, amount, balance, n)
     ORDER BY l.n;
END
$$;
