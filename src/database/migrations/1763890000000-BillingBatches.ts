import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Holds and settlements of many concurrent requests in one call (and so one round trip and one
 * commit): each item runs the same billing_reserve / billing_settle as a single request would.
 * Items are taken in account order, the order every other writer of account rows follows, so
 * two batches never wait on each other in a cycle. Item numbers are 0-based positions in the input.
 */
export class BillingBatches1763890000000 implements MigrationInterface {
  name = 'BillingBatches1763890000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION billing_reserve_batch(p_items jsonb)
      RETURNS TABLE (item integer, outcome text, hold_micros bigint, allowance bigint, capped boolean,
                     available_micros bigint, limit_micros bigint, limit_remaining_micros bigint,
                     affordable_tokens bigint, needed_micros bigint)
      LANGUAGE plpgsql AS $$
      DECLARE r record;
      BEGIN
        FOR r IN
          SELECT (e.ord - 1)::integer AS i, e.v FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(v, ord)
           ORDER BY (e.v->>'account')::uuid, e.ord
        LOOP
          RETURN QUERY SELECT r.i, b.* FROM billing_reserve(
            (r.v->>'account')::uuid, r.v->>'request', (r.v->>'prompt')::bigint, (r.v->>'requested')::bigint,
            (r.v->>'max_output')::integer, (r.v->>'in_picos')::bigint, (r.v->>'out_picos')::bigint,
            (r.v->>'ttl_ms')::integer) b;
        END LOOP;
      END
      $$`);

    await q.query(`
      CREATE FUNCTION billing_settle_batch(p_items jsonb)
      RETURNS TABLE (item integer, charged bigint)
      LANGUAGE plpgsql AS $$
      DECLARE r record;
      BEGIN
        FOR r IN
          SELECT (e.ord - 1)::integer AS i, e.v FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(v, ord)
           ORDER BY (e.v->>'account')::uuid, e.ord
        LOOP
          RETURN QUERY SELECT r.i, s.charged FROM billing_settle(
            (r.v->>'account')::uuid, r.v->>'request', (r.v->>'prompt')::bigint, (r.v->>'completion')::bigint,
            (r.v->>'in_picos')::bigint, (r.v->>'out_picos')::bigint) s;
        END LOOP;
      END
      $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS billing_settle_batch(jsonb)`);
    await q.query(`DROP FUNCTION IF EXISTS billing_reserve_batch(jsonb)`);
  }
}
