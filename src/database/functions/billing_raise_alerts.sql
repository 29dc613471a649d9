-- Alerts of one account's settlements (DESIGN.md 12.4, docs/operations.md "Webhooks"), called by
-- billing_lease_settle_batch after it has written the account's charges, under the account's row lock and in the
-- settlement's transaction: the outbox rows are committed with the charges that crossed the thresholds, or not at
-- all. budget.threshold: the month's spend (charged money, holds excluded) of the account (p_months) or of a key
-- budget (p_budgets with p_budget_months) at 50, 80 or 100% of its monthly limit; credits.low: the balance below
-- the account's low_credits_micros, once per crossing (low_credits_below re-arms when the balance is back at or
-- above it, here or at a top-up). The unique key (subject, type, period, threshold) writes each event once.
CREATE OR REPLACE FUNCTION billing_raise_alerts(p_account uuid, p_months date[], p_budgets uuid[], p_budget_months date[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  a record;
BEGIN
  INSERT INTO webhook_events (type, subject, period, threshold, data)
    SELECT 'budget.threshold', 'account:' || c.account_id, to_char(c.month, 'YYYY-MM'), t.pct,
           jsonb_build_object('scope', 'account', 'account_id', c.account_id, 'month', to_char(c.month, 'YYYY-MM'),
                              'threshold_percent', t.pct,
                              'monthly_limit_usd', (l.monthly_limit_micros::numeric / 1000000)::numeric(38, 6)::text,
                              'month_spend_usd', (c.spend_micros::numeric / 1000000)::numeric(38, 6)::text)
      FROM monthly_counters c
      JOIN accounts l ON l.id = c.account_id
     CROSS JOIN unnest(ARRAY[50, 80, 100]) AS t(pct)
     WHERE c.account_id = p_account AND c.month IN (SELECT DISTINCT unnest(p_months))
       AND l.monthly_limit_micros > 0 AND c.spend_micros::numeric * 100 >= l.monthly_limit_micros::numeric * t.pct
    ON CONFLICT DO NOTHING;

  INSERT INTO webhook_events (type, subject, period, threshold, data)
    SELECT 'budget.threshold', 'key_budget:' || c.budget_id, to_char(c.month, 'YYYY-MM'), t.pct,
           jsonb_build_object('scope', 'key', 'account_id', p_account, 'key_id', k.id, 'month', to_char(c.month, 'YYYY-MM'),
                              'threshold_percent', t.pct,
                              'monthly_limit_usd', (k.monthly_limit_micros::numeric / 1000000)::numeric(38, 6)::text,
                              'month_spend_usd', (c.spend_micros::numeric / 1000000)::numeric(38, 6)::text)
      FROM (SELECT DISTINCT u.budget, u.month FROM unnest(p_budgets, p_budget_months) AS u(budget, month) WHERE u.budget IS NOT NULL) b
      JOIN key_monthly_counters c ON c.budget_id = b.budget AND c.month = b.month
     -- The budget's newest key: a rotated key and its successor share the budget and its limit.
     CROSS JOIN LATERAL (SELECT k.id, k.monthly_limit_micros FROM api_keys k WHERE k.budget_id = b.budget ORDER BY k.created_at DESC LIMIT 1) k
     CROSS JOIN unnest(ARRAY[50, 80, 100]) AS t(pct)
     WHERE k.monthly_limit_micros > 0 AND c.spend_micros::numeric * 100 >= k.monthly_limit_micros::numeric * t.pct
    ON CONFLICT DO NOTHING;

  SELECT x.balance_micros, x.low_credits_micros, x.low_credits_below, x.low_credits_crossings INTO a
    FROM accounts x WHERE x.id = p_account;
  IF a.low_credits_micros IS NOT NULL AND a.balance_micros < a.low_credits_micros AND NOT a.low_credits_below THEN
    UPDATE accounts SET low_credits_below = true, low_credits_crossings = low_credits_crossings + 1 WHERE id = p_account;
    INSERT INTO webhook_events (type, subject, period, threshold, data)
      VALUES ('credits.low', 'account:' || p_account, (a.low_credits_crossings + 1)::text, a.low_credits_micros,
              jsonb_build_object('account_id', p_account,
                                 'credits_usd', (a.balance_micros::numeric / 1000000)::numeric(38, 6)::text,
                                 'low_credits_usd', (a.low_credits_micros::numeric / 1000000)::numeric(38, 6)::text))
    ON CONFLICT DO NOTHING;
  ELSIF a.low_credits_below AND (a.low_credits_micros IS NULL OR a.balance_micros >= a.low_credits_micros) THEN
    UPDATE accounts SET low_credits_below = false WHERE id = p_account;
  END IF;
END
$$;
