-- A hold's amount in micro-USD: a prompt bound and an output allowance at prices in pico-USD per token (the
-- highest of their token classes), rounded up, once. The application's worstCaseMicros (src/billing/request-cost.ts)
-- is the same arithmetic, and the charges (requestCost there) round the same way, so no charge exceeds its hold.
CREATE OR REPLACE FUNCTION billing_cost_micros(p_prompt bigint, p_completion bigint, p_in_picos bigint, p_out_picos bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT div(p_prompt::numeric * p_in_picos + p_completion::numeric * p_out_picos + 999999, 1000000)::bigint
$$;
