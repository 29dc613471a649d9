-- Cost in micro-USD of a token count at prices in pico-USD per token, rounded half up, once.
-- It prices holds and charges alike, so a charge never exceeds its hold for the same token counts.
CREATE OR REPLACE FUNCTION billing_cost_micros(p_prompt bigint, p_completion bigint, p_in_picos bigint, p_out_picos bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT div(p_prompt::numeric * p_in_picos + p_completion::numeric * p_out_picos + 500000, 1000000)::bigint
$$;
