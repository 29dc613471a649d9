import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlFunctionFiles } from '../functions/sql-functions';

const CLASS_COLUMNS = ['cached_tokens', 'cache_write_tokens', 'reasoning_tokens', 'audio_input_tokens', 'audio_output_tokens'];

// The four functions as src/database/functions defined them before this migration (after KeyControls1764240000000), word for word.
const PREVIOUS_FUNCTIONS: readonly string[] = [
  // billing_cost_micros
  `-- Cost in micro-USD of a token count at prices in pico-USD per token, rounded half up, once.
-- It prices holds and charges alike, so a charge never exceeds its hold for the same token counts.
CREATE OR REPLACE FUNCTION billing_cost_micros(p_prompt bigint, p_completion bigint, p_in_picos bigint, p_out_picos bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT div(p_prompt::numeric * p_in_picos + p_completion::numeric * p_out_picos + 500000, 1000000)::bigint
$$;`,
  // billing_reserve_decide
  `-- The affordability rule: whether a hold fits what the account has available and what its spending limit
-- still allows this month, its output allowance (the client's own limit, or the model's maximum capped to
-- what fits) and its amount. Pure arithmetic on figures read under the account row lock.
CREATE OR REPLACE FUNCTION billing_reserve_decide(
  p_available bigint, p_limit bigint, p_limit_remaining bigint, p_prompt bigint, p_requested bigint,
  p_max_output integer, p_in_picos bigint, p_out_picos bigint)
RETURNS TABLE (outcome text, hold_micros bigint, allowance bigint, capped boolean,
               available_micros bigint, limit_micros bigint, limit_remaining_micros bigint,
               affordable_tokens bigint, needed_micros bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v_budget bigint; v_binding text; v_room numeric; v_affordable bigint; v_allowance bigint; v_needed bigint;
BEGIN
  -- The tighter of the two constraints is the one reported when the request cannot be afforded.
  IF p_limit_remaining IS NOT NULL AND p_limit_remaining < p_available THEN
    v_budget := p_limit_remaining; v_binding := 'monthly_limit_reached';
  ELSE
    v_budget := p_available; v_binding := 'insufficient_credits';
  END IF;

  -- Largest o with billing_cost_micros(prompt, o) <= budget (rounding half up).
  v_room := (v_budget + 1)::numeric * 1000000 - 500001 - p_prompt::numeric * p_in_picos;
  IF v_room < 0 THEN v_affordable := -1;
  ELSIF p_out_picos = 0 THEN v_affordable := 9223372036854775807;
  ELSE v_affordable := LEAST(div(v_room, p_out_picos), 9223372036854775807)::bigint;
  END IF;

  IF p_requested IS NOT NULL THEN
    v_allowance := p_requested;
    IF v_affordable < p_requested THEN v_allowance := NULL; END IF;
  ELSE
    v_allowance := LEAST(p_max_output, v_affordable);
    IF v_allowance < 1 THEN v_allowance := NULL; END IF;
  END IF;

  IF v_allowance IS NULL THEN
    RETURN QUERY SELECT v_binding, 0::bigint, 0::bigint, false, p_available, p_limit, p_limit_remaining,
                        GREATEST(v_affordable, 0), billing_cost_micros(p_prompt, COALESCE(p_requested, 1), p_in_picos, p_out_picos);
    RETURN;
  END IF;
  v_needed := billing_cost_micros(p_prompt, v_allowance, p_in_picos, p_out_picos);
  RETURN QUERY SELECT 'ok'::text, v_needed, v_allowance, (p_requested IS NULL AND v_allowance < p_max_output),
                      p_available - v_needed, p_limit, p_limit_remaining - v_needed, v_affordable, v_needed;
END
$$;`,
  // billing_settle
  `-- A settlement whose budget lease is gone (swept while its request still ran, docs/billing.md "Hold
-- sweeper"), called by billing_lease_settle_batch: the hold no longer reserves anything, so it charges
-- only what is still free — min(cost, available, what the spending limit still allows) — to this month.
-- A request charged already is charged nothing.
CREATE OR REPLACE FUNCTION billing_settle(
  p_account uuid, p_request text, p_prompt bigint, p_completion bigint, p_in_picos bigint, p_out_picos bigint)
RETURNS TABLE (charged bigint, balance_after bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
  v_cost bigint := billing_cost_micros(p_prompt, p_completion, p_in_picos, p_out_picos);
  f record; v_charge bigint; v_balance bigint;
BEGIN
  SELECT * INTO f FROM billing_account_figures(p_account, v_month);
  IF EXISTS (SELECT 1 FROM ledger_entries l WHERE l.request_id = p_request AND l.kind = 'charge') THEN
    RETURN QUERY SELECT 0::bigint, a.balance_micros FROM accounts a WHERE a.id = p_account;
    RETURN;
  END IF;
  v_charge := GREATEST(0, LEAST(v_cost, f.available_micros, COALESCE(f.limit_remaining_micros, v_cost)));
  UPDATE accounts SET balance_micros = balance_micros - v_charge
    WHERE id = p_account RETURNING balance_micros INTO v_balance;
  UPDATE monthly_counters SET spend_micros = spend_micros + v_charge WHERE account_id = p_account AND month = v_month;
  IF v_charge > 0 THEN
    INSERT INTO ledger_entries (account_id, kind, amount_micros, balance_after_micros, request_id)
      VALUES (p_account, 'charge', -v_charge, v_balance, p_request);
  END IF;
  RETURN QUERY SELECT v_charge, v_balance;
END
$$;`,
  // billing_lease_settle_batch (as the key controls' migration left it)
  `-- Charges settled requests to their budget leases (docs/billing.md, "Budget leases"). Items: account, lease,
-- request, hold (the request's part of the lease), release_rest (give the part not charged back to the
-- account rather than keep it in the lease), prompt, completion, in_picos, out_picos, budget (the key's
-- budget, whose month spend counts the charge; null: none), key_lease (the hold is in that key's own lease,
-- so it is counted in the key's held amount too). The charge is the cost,
-- at most the hold: the hold was affordable, so the balance cannot go negative. The lease rows, the account
-- rows and the lease month's counters are written once per call. A request whose lease is gone (swept)
-- settles through billing_settle, which charges only what is still free (the key's limit included); its
-- \`released\` is null. Lock order: lease rows, account rows (ascending id), monthly counters, key counters.
-- Item numbers are 0-based.
CREATE OR REPLACE FUNCTION billing_lease_settle_batch(p_items jsonb)
RETURNS TABLE (item integer, charged bigint, released bigint)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  v_leases text[]; v_lease_months date[];
  v_account uuid; v_balance bigint; v_charge bigint; v_release bigint;
  v_released bigint; v_months date[]; v_month_released bigint[]; v_month_charged bigint[];
  v_ledger_requests text[]; v_ledger_amounts bigint[]; v_ledger_balances bigint[];
  v_shrunk text[] := '{}'; v_shrinks bigint[] := '{}';
  v_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
  v_key_budgets uuid[]; v_key_months date[]; v_key_released bigint[]; v_key_charged bigint[];
  v_key_limit bigint; v_key_remaining bigint; v_swept_cost bigint; v_swept_charge bigint;
BEGIN
  SELECT COALESCE(array_agg(l.lease), '{}'), COALESCE(array_agg(l.month), '{}') INTO v_leases, v_lease_months
    FROM billing_lock_leases(p_items) l;

  FOR r IN
    SELECT (e.ord - 1)::integer AS i, (e.v->>'account')::uuid AS account, e.v->>'request' AS request,
           e.v->>'lease' AS lease, (e.v->>'hold')::bigint AS held, (e.v->>'release_rest')::boolean AS release_rest,
           (e.v->>'budget')::uuid AS budget, COALESCE((e.v->>'key_lease')::boolean, false) AS key_lease,
           billing_cost_micros((e.v->>'prompt')::bigint, (e.v->>'completion')::bigint,
                               (e.v->>'in_picos')::bigint, (e.v->>'out_picos')::bigint) AS cost,
           l.month
      FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(v, ord)
      LEFT JOIN unnest(v_leases, v_lease_months) AS l(lease, month) ON l.lease = e.v->>'lease'
     -- Per account: the requests whose lease is gone first (they settle on their own), then the rest.
     ORDER BY 2, (l.month IS NOT NULL), e.ord
  LOOP
    IF v_account IS DISTINCT FROM r.account THEN
      IF v_account IS NOT NULL THEN
        PERFORM billing_apply_charges(v_account, v_balance, v_released, v_months, v_month_released, v_month_charged,
                                      v_ledger_requests, v_ledger_amounts, v_ledger_balances);
        PERFORM billing_apply_key_charges(v_account, v_key_budgets, v_key_months, v_key_released, v_key_charged);
      END IF;
      v_account := r.account;
      PERFORM 1 FROM accounts a WHERE a.id = v_account FOR UPDATE;
      v_balance := NULL; v_released := 0; v_months := '{}'; v_month_released := '{}'; v_month_charged := '{}';
      v_ledger_requests := '{}'; v_ledger_amounts := '{}'; v_ledger_balances := '{}';
      v_key_budgets := '{}'; v_key_months := '{}'; v_key_released := '{}'; v_key_charged := '{}';
    END IF;

    IF r.month IS NULL THEN
      v_swept_cost := r.cost;
      IF r.budget IS NOT NULL THEN
        SELECT kf.limit_micros, kf.limit_remaining_micros INTO v_key_limit, v_key_remaining
          FROM billing_key_figures(r.account, r.budget, v_month) kf;
        -- Charges of this batch not yet written to the key's counter count too.
        SELECT v_key_remaining - COALESCE(sum(c), 0) INTO v_key_remaining
          FROM unnest(v_key_budgets, v_key_months, v_key_charged) AS u(b, m, c) WHERE b = r.budget AND m = v_month;
        IF v_key_limit IS NOT NULL THEN v_swept_cost := GREATEST(0, LEAST(v_swept_cost, v_key_remaining)); END IF;
      END IF;
      -- billing_settle takes a token count: the cost, capped to what the key's limit still allows, is handed
      -- over as one prompt token at that many micro-USD (10^6 pico-USD each), which it prices exactly.
      SELECT s.charged INTO v_swept_charge FROM billing_settle(r.account, r.request, 1, 0, v_swept_cost * 1000000, 0) s;
      v_key_budgets := v_key_budgets || r.budget;
      v_key_months := v_key_months || v_month;
      v_key_released := v_key_released || 0::bigint;
      v_key_charged := v_key_charged || v_swept_charge;
      RETURN QUERY SELECT r.i, v_swept_charge, NULL::bigint;
      CONTINUE;
    END IF;
    IF v_balance IS NULL THEN
      SELECT a.balance_micros INTO v_balance FROM accounts a WHERE a.id = v_account;
    END IF;
    v_charge := LEAST(r.cost, r.held);
    v_release := CASE WHEN r.release_rest THEN r.held ELSE v_charge END;
    v_balance := v_balance - v_charge;
    v_released := v_released + v_release;
    v_months := v_months || r.month;
    v_month_released := v_month_released || v_release;
    v_month_charged := v_month_charged || v_charge;
    v_shrunk := v_shrunk || r.lease;
    v_shrinks := v_shrinks || v_release;
    v_key_budgets := v_key_budgets || r.budget;
    v_key_months := v_key_months || r.month;
    v_key_released := v_key_released || CASE WHEN r.key_lease THEN v_release ELSE 0 END;
    v_key_charged := v_key_charged || v_charge;
    IF v_charge > 0 THEN
      v_ledger_requests := v_ledger_requests || r.request;
      v_ledger_amounts := v_ledger_amounts || -v_charge;
      v_ledger_balances := v_ledger_balances || v_balance;
    END IF;
    RETURN QUERY SELECT r.i, v_charge, v_release;
  END LOOP;
  IF v_account IS NOT NULL THEN
    PERFORM billing_apply_charges(v_account, v_balance, v_released, v_months, v_month_released, v_month_charged,
                                  v_ledger_requests, v_ledger_amounts, v_ledger_balances);
    PERFORM billing_apply_key_charges(v_account, v_key_budgets, v_key_months, v_key_released, v_key_charged);
  END IF;

  UPDATE holds h SET amount_micros = h.amount_micros - s.amount
    FROM (SELECT lease, sum(amount)::bigint AS amount FROM unnest(v_shrunk, v_shrinks) AS u(lease, amount) GROUP BY lease) s
   WHERE h.request_id = s.lease;
END
$$;`,
];

/**
 * Token classes (DESIGN.md section 10, docs/billing.md "Token classes"). The usage record gets a column per
 * class: cached, cache-write, reasoning, audio input and audio output tokens (parts of the prompt and
 * completion tokens; 0 for older rows and for requests without tokens). The application now computes a
 * request's cost from its whole usage block (src/billing/request-cost.ts) and hands the settlement that cost:
 * billing_settle takes it instead of the token counts and prices, and the batch reads it from its items. Costs
 * and holds are rounded up to the micro-dollar (they were rounded half up). Installs the function files again.
 */
export class TokenClasses1764260000000 implements MigrationInterface {
  /** SHA-256 of the function files this migration installs (see BillingFunctionFiles1763930000000). */
  static readonly functionFilesSha256 = '56b805707555263ab2898176e90f12dd0c3f6fd474d98c78ada243b44a5f0d6e';
  /** What this migration's down restores: the functions it changes, as the files defined them before it. */
  static readonly previousFunctions = PREVIOUS_FUNCTIONS;
  name = 'TokenClasses1764260000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_records ${CLASS_COLUMNS.map((c) => `ADD COLUMN ${c} integer NOT NULL DEFAULT 0`).join(', ')}`);
    await q.query(`DROP FUNCTION IF EXISTS billing_settle(uuid, text, bigint, bigint, bigint, bigint)`);
    for (const fn of sqlFunctionFiles()) await q.query(fn.sql);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS billing_settle(uuid, text, bigint)`);
    for (const sql of PREVIOUS_FUNCTIONS) await q.query(sql);
    await q.query(`ALTER TABLE usage_records ${CLASS_COLUMNS.map((c) => `DROP COLUMN ${c}`).join(', ')}`);
  }
}
