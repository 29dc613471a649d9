import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** A delivery claimed by this replica: its event and where it goes. */
export interface ClaimedDelivery {
  id: string;
  url: string;
  attempts: number;
  eventId: string;
  type: string;
  created: Date;
  data: Record<string, unknown>;
}

/** One row of the admin's list (GET /admin/v1/webhooks/deliveries). */
export interface DeliveryView {
  id: string;
  event_id: string;
  type: string;
  url: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
  data: Record<string, unknown>;
}

/** TypeORM answers an UPDATE … RETURNING with [rows, affectedCount]. */
const updated = <T>(answer: unknown): T[] => (answer as [T[], number])[0];
const iso = (date: Date | null): string | null => date?.toISOString() ?? null;

/**
 * The webhook outbox (DESIGN.md 12.4, docs/operations.md "Webhooks"): webhook_events, written by the settlements
 * (billing_raise_alerts) and by the expiry scan, each fanned out into one webhook_deliveries row per configured
 * receiver that subscribes to its type. Every statement here is safe for any number of replicas at once.
 */
@Injectable()
export class WebhookOutbox {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Fans events not yet dispatched out to the receivers of their type (`routes`: url and event type pairs) and marks
   * them dispatched, in one statement; SKIP LOCKED leaves the events another replica is dispatching to it. An event
   * no receiver wants is marked all the same: receivers configured later get the events written after.
   */
  async dispatch(routes: { url: string; type: string }[], batch = 500): Promise<number> {
    const [{ count }] = await this.db.query(
      `WITH fresh AS (
         SELECT id, type FROM webhook_events WHERE dispatched_at IS NULL ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED
       ), marked AS (
         UPDATE webhook_events e SET dispatched_at = now() FROM fresh WHERE e.id = fresh.id RETURNING e.id
       ), added AS (
         INSERT INTO webhook_deliveries (event_id, url)
         SELECT f.id, r.url FROM fresh f JOIN unnest($1::text[], $2::text[]) AS r(url, type) ON r.type = f.type
         ON CONFLICT DO NOTHING RETURNING 1
       )
       SELECT (SELECT count(*) FROM marked)::int AS count, (SELECT count(*) FROM added)::int AS added`,
      [routes.map((r) => r.url), routes.map((r) => r.type), batch],
    );
    return count;
  }

  /**
   * Claims up to `limit` due deliveries for this replica: the row locks (SKIP LOCKED) keep two replicas from claiming
   * one delivery, and its next attempt moves `leaseMs` ahead, past the end of this replica's attempt, so nobody
   * else tries it meanwhile. A replica that dies mid-attempt leaves it due again after the lease: at least once.
   * Only deliveries to `urls` (this replica's receivers): during a change of config, a replica that does not know a
   * receiver leaves its deliveries to those that do.
   */
  async claim(urls: string[], limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    const rows = updated<{ id: string; url: string; attempts: number; event_id: string; type: string; created_at: Date; data: Record<string, unknown> }>(
      await this.db.query(
        `UPDATE webhook_deliveries d
            SET attempts = d.attempts + 1, last_attempt_at = now(), next_attempt_at = now() + $2 * interval '1 millisecond'
           FROM webhook_events e
          WHERE e.id = d.event_id
            AND d.id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= now() AND url = ANY($3)
                          ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
          RETURNING d.id::text AS id, d.url, d.attempts, e.id AS event_id, e.type, e.created_at, e.data`,
        [limit, leaseMs, urls],
      ),
    );
    return rows.map((r) => ({ id: r.id, url: r.url, attempts: r.attempts, eventId: r.event_id, type: r.type, created: r.created_at, data: r.data }));
  }

  async delivered(id: string, status: number): Promise<void> {
    await this.db.query(`UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now(), last_status = $2, last_error = NULL WHERE id = $1`, [id, status]);
  }

  /**
   * Records a failed attempt: the next one after `retryInMs`, unless that is past `retryForS` after the event was
   * written, when the delivery is given up (failed).
   */
  async failed(id: string, status: number | null, error: string, retryInMs: number, retryForS: number): Promise<void> {
    await this.db.query(
      `UPDATE webhook_deliveries d
          SET last_status = $2, last_error = left($3, 1000), next_attempt_at = now() + $4 * interval '1 millisecond',
              status = CASE WHEN now() + $4 * interval '1 millisecond' > e.created_at + $5 * interval '1 second' THEN 'failed' ELSE 'pending' END
         FROM webhook_events e
        WHERE d.id = $1 AND e.id = d.event_id`,
      [id, status, error, retryInMs, retryForS],
    );
  }

  /**
   * key.expiring for every live key whose expiry is within 7 days: once per key and expiry (a changed expiry is a
   * new event), through the outbox's unique key, whichever replica scans first.
   */
  async scanExpiringKeys(): Promise<number> {
    const rows = await this.db.query(
      `INSERT INTO webhook_events (type, subject, period, threshold, data)
       SELECT 'key.expiring', 'key:' || k.id, to_char(k.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 7,
              jsonb_build_object('account_id', k.account_id, 'key_id', k.id, 'name', k.name,
                                 'expires_at', to_char(k.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
         FROM api_keys k
        WHERE k.revoked_at IS NULL AND k.expires_at > now() AND k.expires_at <= now() + interval '7 days'
       ON CONFLICT DO NOTHING RETURNING 1`,
    );
    return rows.length;
  }

  /** The latest deliveries, newest first; `status` narrows them (failed: the ones given up). */
  async recent(limit: number, status?: string): Promise<DeliveryView[]> {
    const rows: (Omit<DeliveryView, 'created_at' | 'last_attempt_at' | 'next_attempt_at' | 'delivered_at'> & Record<'created_at' | 'last_attempt_at' | 'next_attempt_at' | 'delivered_at', Date | null>)[] = await this.db.query(
      `SELECT d.id::text AS id, d.event_id, e.type, d.url, d.status, d.attempts, d.last_status, d.last_error,
              d.created_at, d.last_attempt_at, d.next_attempt_at, d.delivered_at, e.data
         FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
        WHERE $2::text IS NULL OR d.status = $2
        ORDER BY d.created_at DESC, d.id DESC LIMIT $1`,
      [limit, status ?? null],
    );
    return rows.map((r) => ({
      ...r,
      created_at: iso(r.created_at)!,
      last_attempt_at: iso(r.last_attempt_at),
      next_attempt_at: r.status === 'pending' ? iso(r.next_attempt_at) : null,
      delivered_at: iso(r.delivered_at),
    }));
  }
}
