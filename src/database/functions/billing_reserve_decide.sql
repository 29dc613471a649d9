-- The affordability rule: whether a hold fits what the account has available and what its spending limit
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

  -- Largest o with billing_cost_micros(prompt, o) <= budget: rounded up, that is prompt × in + o × out <= budget × 10^6.
  v_room := v_budget::numeric * 1000000 - p_prompt::numeric * p_in_picos;
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
$$;
