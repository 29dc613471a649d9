-- The existing lease rows of a batch's items, locked first (ascending id) as every hold writer does.
CREATE OR REPLACE FUNCTION billing_lock_leases(p_items jsonb) RETURNS TABLE (lease text, month date)
LANGUAGE sql AS $$
  SELECT h.request_id, h.month FROM holds h
   WHERE h.request_id IN (SELECT e.v->>'lease' FROM jsonb_array_elements(p_items) AS e(v))
   ORDER BY h.id FOR UPDATE
$$;
