import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlFunctionFiles } from '../functions/sql-functions';

/** The functions this migration adds (their files in src/database/functions). */
const NEW_FUNCTIONS = ['billing_key_figures(uuid, uuid, date)', 'billing_move_key_held(uuid, date, bigint)', 'billing_apply_key_charges(uuid, uuid[], date[], bigint[], bigint[])'];

/**
 * Key controls (DESIGN.md section 10, docs/billing.md "Key limits"): per key a monthly limit, an expiry and a
 * model list; a key budget (`budget_id`) that a rotated key shares with its successor, with its month's spend
 * and holds in key_monthly_counters; and leases of a key's own (holds.budget_id). Installs the function files
 * again (grow, settle, release and sweep count the key budgets).
 */
export class KeyControls1764240000000 implements MigrationInterface {
  /** SHA-256 of the function files this migration installs (see BillingFunctionFiles1763930000000). */
  static readonly functionFilesSha256 = '5d8bc53a6ac619e8ef50f06ab50bae275d3e7e4245c5f5579f07e824419cf8a2';
  name = 'KeyControls1764240000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys
      ADD COLUMN monthly_limit_micros bigint NULL CHECK (monthly_limit_micros >= 0),
      ADD COLUMN expires_at timestamptz NULL,
      ADD COLUMN models text[] NULL CHECK (cardinality(models) > 0),
      ADD COLUMN budget_id uuid NULL`);
    await q.query(`UPDATE api_keys SET budget_id = id`);
    await q.query(`ALTER TABLE api_keys ALTER COLUMN budget_id SET NOT NULL, ALTER COLUMN budget_id SET DEFAULT gen_random_uuid()`);
    await q.query(`CREATE INDEX api_keys_budget_idx ON api_keys (budget_id)`);
    await q.query(`
      CREATE TABLE key_monthly_counters (
        budget_id uuid NOT NULL,
        month date NOT NULL,
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        spend_micros bigint NOT NULL DEFAULT 0 CHECK (spend_micros >= 0),
        held_micros bigint NOT NULL DEFAULT 0 CHECK (held_micros >= 0),
        PRIMARY KEY (budget_id, month)
      )`);
    await q.query(`ALTER TABLE holds ADD COLUMN budget_id uuid NULL`);
    for (const fn of sqlFunctionFiles()) await q.query(fn.sql);
  }

  /** Back to the functions as they were before (their text below), without the key budgets. */
  async down(q: QueryRunner): Promise<void> {
    for (const fn of NEW_FUNCTIONS) await q.query(`DROP FUNCTION IF EXISTS ${fn}`);
    for (const sql of Object.values(PREVIOUS_FUNCTIONS)) await q.query(sql);
    await q.query(`ALTER TABLE holds DROP COLUMN budget_id`);
    await q.query(`DROP TABLE key_monthly_counters`);
    await q.query(`ALTER TABLE api_keys DROP COLUMN monthly_limit_micros, DROP COLUMN expires_at, DROP COLUMN models, DROP COLUMN budget_id`);
  }
}

/** The functions this migration changed, as the files defined them before it. */
const PREVIOUS_FUNCTIONS: Record<string, string> = {
  billing_lease_grow_batch: `-- Grows budget leases, one item per request that did not fit in its replica's lease (docs/billing.md,
-- "Budget leases"). Items: account, lease, known (its row was created), claimed (the lease's free part,
-- given up to this request), prompt, requested, max_output, in_picos, out_picos, ttl_ms, spare (holds of
-- spare room wanted), plenty (spare room only while the account could still afford this many such holds).
-- Per account, in input order: the decision is billing_reserve_decide's, on what the account has available
-- plus the claimed part, after the items before it. lease_delta is how much the lease row grew (negative:
-- it gave the claimed part back). Lock order: lease rows, account rows (ascending id), monthly counters.
-- Item numbers are 0-based positions in the input array.
CREATE OR REPLACE FUNCTION billing_lease_grow_batch(p_items jsonb)
RETURNS TABLE (item integer, outcome text, hold_micros bigint, allowance bigint, capped boolean,
               available_micros bigint, limit_micros bigint, limit_remaining_micros bigint,
               affordable_tokens bigint, needed_micros bigint, lease_delta bigint, plenty boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_month date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
  r record; d record; f record;
  v_leases text[]; v_lease_months date[];
  v_account uuid; v_added bigint;
  v_claimed bigint; v_plenty boolean; v_delta bigint;
  v_grown text[] := '{}'; v_deltas bigint[] := '{}'; v_accounts uuid[] := '{}'; v_expiries timestamptz[] := '{}';
BEGIN
  SELECT COALESCE(array_agg(l.lease), '{}'), COALESCE(array_agg(l.month), '{}') INTO v_leases, v_lease_months
    FROM billing_lock_leases(p_items) l;

  FOR r IN
    SELECT (e.ord - 1)::integer AS i, (e.v->>'account')::uuid AS account, e.v, l.month AS lease_month
      FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(v, ord)
      LEFT JOIN unnest(v_leases, v_lease_months) AS l(lease, month) ON l.lease = e.v->>'lease'
     ORDER BY 2, e.ord
  LOOP
    IF v_account IS DISTINCT FROM r.account THEN
      IF v_account IS NOT NULL THEN PERFORM billing_move_held(v_account, v_month, v_added); END IF;
      v_account := r.account;
      SELECT * INTO f FROM billing_account_figures(v_account, v_month);
      v_added := 0;
    END IF;

    -- Swept while its process still used it, or taken out last month: the process starts a new one.
    IF (r.lease_month IS NULL AND (r.v->>'known')::boolean) OR r.lease_month <> v_month THEN
      RETURN QUERY SELECT r.i, CASE WHEN r.lease_month IS NULL THEN 'lease_gone' ELSE 'lease_stale' END,
                          0::bigint, 0::bigint, false, 0::bigint, NULL::bigint, NULL::bigint, 0::bigint, 0::bigint, 0::bigint, false;
      CONTINUE;
    END IF;

    v_claimed := (r.v->>'claimed')::bigint;
    SELECT * INTO d FROM billing_reserve_decide(
      f.available_micros - v_added + v_claimed, f.limit_micros, f.limit_remaining_micros - v_added + v_claimed,
      (r.v->>'prompt')::bigint, (r.v->>'requested')::bigint, (r.v->>'max_output')::integer,
      (r.v->>'in_picos')::bigint, (r.v->>'out_picos')::bigint);
    IF d.outcome = 'ok' THEN
      v_plenty := LEAST(d.available_micros, COALESCE(d.limit_remaining_micros, d.available_micros))::numeric
                  >= (r.v->>'plenty')::numeric * d.hold_micros;
      v_delta := d.hold_micros - v_claimed
                 + CASE WHEN v_plenty THEN (r.v->>'spare')::bigint * d.hold_micros ELSE 0 END;
    ELSE
      v_plenty := false;
      v_delta := -v_claimed;
    END IF;
    v_added := v_added + v_delta;
    v_grown := v_grown || (r.v->>'lease');
    v_deltas := v_deltas || v_delta;
    v_accounts := v_accounts || r.account;
    v_expiries := v_expiries || (now() + (r.v->>'ttl_ms')::integer * interval '1 millisecond');
    RETURN QUERY SELECT r.i, d.outcome, d.hold_micros, d.allowance, d.capped, d.available_micros, d.limit_micros,
                        d.limit_remaining_micros, d.affordable_tokens, d.needed_micros, v_delta, v_plenty;
  END LOOP;
  IF v_account IS NOT NULL THEN PERFORM billing_move_held(v_account, v_month, v_added); END IF;

  UPDATE holds h SET amount_micros = h.amount_micros + g.delta, expires_at = g.expires
    FROM (SELECT u.lease, sum(u.delta)::bigint AS delta, max(u.expires) AS expires
            FROM unnest(v_grown, v_deltas, v_expiries) AS u(lease, delta, expires) GROUP BY u.lease) g
   WHERE h.request_id = g.lease AND g.lease = ANY(v_leases);
  -- A new lease's row is created by the first grow that puts something in it.
  INSERT INTO holds (account_id, request_id, amount_micros, month, expires_at)
    SELECT min(g.account::text)::uuid, g.lease, sum(g.delta), v_month, max(g.expires)
      FROM unnest(v_accounts, v_grown, v_deltas, v_expiries) AS g(account, lease, delta, expires)
     WHERE NOT g.lease = ANY(v_leases)
     GROUP BY g.lease HAVING sum(g.delta) <> 0;
END
$$;
`,
  billing_lease_settle_batch: `-- Charges settled requests to their budget leases (docs/billing.md, "Budget leases"). Items: account, lease,
-- request, hold (the request's part of the lease), release_rest (give the part not charged back to the
-- account rather than keep it in the lease), prompt, completion, in_picos, out_picos. The charge is the cost,
-- at most the hold: the hold was affordable, so the balance cannot go negative. The lease rows, the account
-- rows and the lease month's counters are written once per call. A request whose lease is gone (swept)
-- settles through billing_settle, which charges only what is still free; its \`released\` is null.
-- Lock order: lease rows, account rows (ascending id), monthly counters. Item numbers are 0-based.
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
BEGIN
  SELECT COALESCE(array_agg(l.lease), '{}'), COALESCE(array_agg(l.month), '{}') INTO v_leases, v_lease_months
    FROM billing_lock_leases(p_items) l;

  FOR r IN
    SELECT (e.ord - 1)::integer AS i, (e.v->>'account')::uuid AS account, e.v->>'request' AS request,
           e.v->>'lease' AS lease, (e.v->>'hold')::bigint AS held, (e.v->>'release_rest')::boolean AS release_rest,
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
      END IF;
      v_account := r.account;
      PERFORM 1 FROM accounts a WHERE a.id = v_account FOR UPDATE;
      v_balance := NULL; v_released := 0; v_months := '{}'; v_month_released := '{}'; v_month_charged := '{}';
      v_ledger_requests := '{}'; v_ledger_amounts := '{}'; v_ledger_balances := '{}';
    END IF;

    IF r.month IS NULL THEN
      RETURN QUERY SELECT r.i, s.charged, NULL::bigint FROM billing_settle(
        r.account, r.request, ((p_items -> r.i)->>'prompt')::bigint, ((p_items -> r.i)->>'completion')::bigint,
        ((p_items -> r.i)->>'in_picos')::bigint, ((p_items -> r.i)->>'out_picos')::bigint) s;
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
  END IF;

  UPDATE holds h SET amount_micros = h.amount_micros - s.amount
    FROM (SELECT lease, sum(amount)::bigint AS amount FROM unnest(v_shrunk, v_shrinks) AS u(lease, amount) GROUP BY lease) s
   WHERE h.request_id = s.lease;
END
$$;
`,
  billing_release: `-- Deletes a hold (a budget lease given back) and gives its amount back; false when it is gone already
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
`,
  billing_sweep_holds: `-- Deletes up to p_batch holds past their expiry (their replica died) and gives their amounts back; returns
-- how many. Nothing while PostgreSQL has been up for less than p_grace_ms (the caller's lease lifetime): live
-- replicas renew their leases first. One sweeper at a time across replicas (advisory lock), accounts updated
-- in a fixed order.
CREATE OR REPLACE FUNCTION billing_sweep_holds(p_batch integer, p_grace_ms integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE r record; v_count integer := 0;
BEGIN
  IF pg_postmaster_start_time() > now() - p_grace_ms * interval '1 millisecond' THEN RETURN 0; END IF;
  IF NOT pg_try_advisory_xact_lock(hashtext('billing_sweep_holds')) THEN RETURN 0; END IF;
  FOR r IN
    WITH gone AS (
      DELETE FROM holds WHERE id IN (
        SELECT id FROM holds WHERE expires_at < now() ORDER BY expires_at LIMIT p_batch FOR UPDATE SKIP LOCKED)
      RETURNING account_id, month, amount_micros)
    SELECT account_id, month, sum(amount_micros)::bigint AS amount, count(*)::integer AS n
      FROM gone GROUP BY account_id, month ORDER BY account_id, month
  LOOP
    PERFORM billing_move_held(r.account_id, r.month, -r.amount);
    v_count := v_count + r.n;
  END LOOP;
  RETURN v_count;
END
$$;
`,
};
