import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig, IdempotencyConfig } from '../config/gateway-config.schema';
import { BodyFingerprint } from './body-fingerprint';

/** A first answer as kept for its repeats: replayed byte for byte. */
export interface KeptAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  model: string | null;
  streamed: boolean;
}

/** What a request with an Idempotency-Key finds (docs/idempotency.md). */
export type Claim =
  | { kind: 'owner'; token: string }
  | { kind: 'replay'; answer: KeptAnswer }
  | { kind: 'in_progress'; retryAfterS: number }
  | { kind: 'reused' };

/** Expired rows deleted per statement, and how often the sweep runs. */
const SWEEP_BATCH = 1000;
const SWEEP_INTERVAL_MS = 10 * 60_000;
/** A claim that vanished between the insert and the read (its owner failed and gave it up) is tried again this often. */
const CLAIM_ATTEMPTS = 3;

/**
 * Idempotency keys in PostgreSQL, per account: one atomic statement claims a key (a new one, or one whose answer
 * expired, or whose owner's claim lapsed: its replica died), so that of concurrent repeats on any replicas exactly
 * one runs; the others find it running (409), or its answer (replay), or another route or body under the key (400).
 */
@Injectable()
export class IdempotencyStore implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(IdempotencyStore.name);
  private readonly config: IdempotencyConfig;
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: DataSource,
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
  ) {
    this.config = config.idempotency;
  }

  get maxAnswerBytes(): number {
    return this.config.max_answer_bytes;
  }

  /** Renew a running claim this often: three times per claim lifetime. */
  get renewEveryMs(): number {
    return (this.config.claim_ttl_s * 1000) / 3;
  }

  async claim(accountId: string, key: string, route: string, body: BodyFingerprint): Promise<Claim> {
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const token = randomUUID();
      const claimed: { token: string }[] = await this.db.query(
        `INSERT INTO idempotency_keys (account_id, key, route, body_hash, token, state, claimed_until, expires_at)
         VALUES ($1, $2, $3, $4, $5, 'running', now() + make_interval(secs => $6), now() + make_interval(secs => $7))
         ON CONFLICT (account_id, key) DO UPDATE
            SET route = EXCLUDED.route, body_hash = EXCLUDED.body_hash, token = EXCLUDED.token, state = 'running',
                claimed_until = EXCLUDED.claimed_until, expires_at = EXCLUDED.expires_at, status = NULL, headers = NULL,
                body = NULL, model = NULL, streamed = false, created_at = now()
          WHERE idempotency_keys.expires_at < now()
             OR (idempotency_keys.state = 'running' AND idempotency_keys.claimed_until < now())
         RETURNING token`,
        [accountId, key, route, body.hash, token, this.config.claim_ttl_s, this.config.keep_s],
      );
      if (claimed[0]?.token === token) return { kind: 'owner', token };
      const [row]: {
        route: string;
        body_hash: string;
        state: string;
        status: number | null;
        headers: Record<string, string> | null;
        body: Buffer | null;
        model: string | null;
        streamed: boolean;
        wait_s: number;
      }[] = await this.db.query(
        `SELECT route, body_hash, state, status, headers, body, model, streamed,
                greatest(1, ceil(extract(epoch FROM least(claimed_until - now(), interval '5 seconds'))))::int AS wait_s
           FROM idempotency_keys WHERE account_id = $1 AND key = $2`,
        [accountId, key],
      );
      if (!row) continue;
      if (row.route !== route || !body.matches(row.body_hash)) return { kind: 'reused' };
      if (row.state === 'running') return { kind: 'in_progress', retryAfterS: row.wait_s };
      return { kind: 'replay', answer: { status: row.status ?? 200, headers: row.headers ?? {}, body: row.body ?? Buffer.alloc(0), model: row.model, streamed: row.streamed } };
    }
    // Each try found a claim that was given up at once: the key is contended; the client may retry.
    return { kind: 'in_progress', retryAfterS: 1 };
  }

  /** The owner's claim lasts another claim_ttl_s (false: it lapsed and another request may own the key now). */
  async renew(accountId: string, key: string, token: string): Promise<boolean> {
    const [, count] = await this.db.query(
      `UPDATE idempotency_keys SET claimed_until = now() + make_interval(secs => $4)
        WHERE account_id = $1 AND key = $2 AND token = $3 AND state = 'running'`,
      [accountId, key, token, this.config.claim_ttl_s],
    );
    return count > 0;
  }

  /** Keeps the owner's answer for its repeats. */
  async keep(accountId: string, key: string, token: string, answer: KeptAnswer): Promise<void> {
    await this.db.query(
      `UPDATE idempotency_keys SET state = 'done', status = $4, headers = $5, body = $6, model = $7, streamed = $8
        WHERE account_id = $1 AND key = $2 AND token = $3`,
      [accountId, key, token, answer.status, JSON.stringify(answer.headers), answer.body, answer.model, answer.streamed],
    );
  }

  /** The owner ended in an error (or its answer is not kept): the key is free, its repeat runs anew. */
  async release(accountId: string, key: string, token: string): Promise<void> {
    await this.db.query(`DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND token = $3`, [accountId, key, token]);
  }

  /** Deletes expired keys, a batch at a time; returns how many. */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const [, count] = await this.db.query(
        `DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE expires_at < now() LIMIT ${SWEEP_BATCH})`,
      );
      total += count;
      if (count < SWEEP_BATCH) return total;
    }
  }

  onModuleInit(): void {
    this.sweepTimer = setInterval(() => {
      this.sweep().catch((err: Error) => this.logger.warn({ err }, `Idempotency sweep failed: ${err.message}`));
    }, SWEEP_INTERVAL_MS);
    this.sweepTimer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.sweepTimer);
  }
}
