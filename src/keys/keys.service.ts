import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { DATABASE_URL } from '../config/config.tokens';
import { AuthContext } from '../common/http/gateway-request';
import { ApiKey } from './api-key.entity';
import { CachedKey, cachedKey, KEY_LOOKUP, KeyRow, usable } from './cached-key';
import { displayPrefix, generateApiKey, hashApiKey, isWellFormedApiKey } from './key-format';
import { CREATION_CHANNEL, KeyNotices, REVOCATION_CHANNEL } from './key-notices';
import { UnknownKeys } from './unknown-keys';

/** Safety net should a revocation notice be missed while the listener reconnects. */
const CACHE_TTL_MS = 60_000;
/** How long a well-formed key the database did not know is refused without a query. */
export const UNKNOWN_KEY_TTL_MS = 30_000;
/** About 1 MB of hashes; forged keys beyond it push out the oldest. */
export const UNKNOWN_KEYS_MAX = 10_000;

/** Statements run in a new key's transaction, given the key in clear: they commit with the key or not at all. */
export type Alongside = (tx: EntityManager, key: string) => Promise<unknown>;

/** A key row with the full key, shown only in the answer that created it. */
export interface CreatedKey {
  row: ApiKey;
  key: string;
}

/** The operator's controls of a key (DESIGN.md section 10); a field left undefined is not changed. */
export interface KeyControls {
  name?: string | null;
  monthlyLimitMicros?: bigint | null;
  expiresAt?: Date | null;
  models?: string[] | null;
  /** Requests and tokens per minute of the key's budget (DESIGN.md 12.4); null: the config's default. */
  rpm?: number | null;
  tpm?: number | null;
}

@Injectable()
export class KeysService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(KeysService.name);
  private readonly cache = new Map<string, CachedKey>();
  private readonly unknown = new UnknownKeys(UNKNOWN_KEY_TTL_MS, UNKNOWN_KEYS_MAX);
  private readonly notices: KeyNotices;
  /** Counts cache invalidations, so that a look-up racing a revocation does not cache a stale row. */
  private invalidations = 0;
  /** Counts creations heard of, so that a look-up racing a key's creation does not remember it as unknown. */
  private creations = 0;
  /** Look-ups of uncached keys running now, by hash. */
  private readonly lookups = new Map<string, { invalidations: number; creations: number; entry: Promise<CachedKey | null> }>();

  constructor(
    @InjectRepository(ApiKey) private readonly keys: Repository<ApiKey>,
    @Inject(DATABASE_URL) databaseUrl: string,
  ) {
    this.notices = new KeyNotices(databaseUrl, this.logger, {
      revoked: (hash) => this.forget(hash),
      created: (hash) => this.learnCreated(hash),
      // Revocations and creations made while disconnected were not heard: everything cached is forgotten.
      missed: () => {
        this.invalidations++;
        this.cache.clear();
        this.creations++;
        this.unknown.clear();
      },
    });
  }

  async onModuleInit(): Promise<void> {
    await this.notices.listen();
  }

  async onModuleDestroy(): Promise<void> {
    await this.notices.stop();
  }

  /** Resolves a presented key to its account, or null. Malformed keys never reach the database. */
  async authenticate(presented: string): Promise<AuthContext | null> {
    if (!isWellFormedApiKey(presented)) return null;
    const hash = hashApiKey(presented);
    const cached = this.cache.get(hash);
    if (cached && cached.expiresAt > Date.now()) return usable(cached);
    if (this.unknown.has(hash)) return null;
    const entry = await this.lookUp(hash);
    return entry && usable(entry);
  }

  /**
   * Reads a key's row into the cache. Concurrent look-ups of one key share one query, so a burst on a key
   * this replica has not cached yet takes one connection, not a pool's worth; one started before a
   * revocation or a creation was heard is not shared after it.
   */
  private lookUp(hash: string): Promise<CachedKey | null> {
    const running = this.lookups.get(hash);
    if (running && running.invalidations === this.invalidations && running.creations === this.creations) return running.entry;
    const lookup = { invalidations: this.invalidations, creations: this.creations, entry: this.readKey(hash) };
    this.lookups.set(hash, lookup);
    const done = () => {
      if (this.lookups.get(hash) === lookup) this.lookups.delete(hash);
    };
    lookup.entry.then(done, done);
    return lookup.entry;
  }

  private async readKey(hash: string): Promise<CachedKey | null> {
    const generation = this.invalidations;
    const creationsBefore = this.creations;
    const [row]: KeyRow[] = await this.keys.query(KEY_LOOKUP, [hash]);
    if (!row) {
      this.cache.delete(hash);
      // Only while listening: a creation made while the listener is down would not be heard.
      if (this.notices.listening && creationsBefore === this.creations) this.unknown.add(hash);
      return null;
    }
    const entry = cachedKey(row, Date.now() + CACHE_TTL_MS);
    // A revocation noticed while the row was read may be this key's: the row may predate it.
    if (generation === this.invalidations) this.cache.set(hash, entry);
    return entry;
  }

  /** A new key; `alongside` runs in the key's own transaction with the key in clear (e.g. to keep it until it is shown). */
  async create(accountId: string, controls: KeyControls = {}, alongside?: Alongside): Promise<CreatedKey> {
    return this.insert(
      {
        accountId,
        name: controls.name ?? null,
        monthlyLimitMicros: controls.monthlyLimitMicros?.toString() ?? null,
        expiresAt: controls.expiresAt ?? null,
        models: controls.models ?? null,
        rpm: controls.rpm ?? null,
        tpm: controls.tpm ?? null,
      },
      alongside,
    );
  }

  /**
   * Changes the named controls of a key and tells every replica to read it again. A limit belongs to the key's
   * budget, so it changes for the key it was rotated from (or to) as well. Null for an unknown key.
   */
  async update(keyId: string, controls: KeyControls): Promise<ApiKey | null> {
    const hashes = await this.keys.manager.transaction(async (tx) => {
      const [row] = await tx.query(`SELECT key_hash, budget_id FROM api_keys WHERE id = $1 FOR UPDATE`, [keyId]);
      if (!row) return null;
      const sets: string[] = [];
      const values: unknown[] = [keyId];
      const set = (column: string, value: unknown) => sets.push(`${column} = $${values.push(value)}`);
      if (controls.name !== undefined) set('name', controls.name);
      if (controls.expiresAt !== undefined) set('expires_at', controls.expiresAt);
      if (controls.models !== undefined) set('models', controls.models);
      if (sets.length > 0) await tx.query(`UPDATE api_keys SET ${sets.join(', ')} WHERE id = $1`, values);
      // The budget's own controls: the limit and the rates, shared with the key it was rotated from (or to).
      const budgetSets: string[] = [];
      const budgetValues: unknown[] = [row.budget_id];
      const setForBudget = (column: string, value: unknown) => budgetSets.push(`${column} = $${budgetValues.push(value)}`);
      if (controls.monthlyLimitMicros !== undefined) setForBudget('monthly_limit_micros', controls.monthlyLimitMicros?.toString() ?? null);
      if (controls.rpm !== undefined) setForBudget('rpm', controls.rpm);
      if (controls.tpm !== undefined) setForBudget('tpm', controls.tpm);
      if (budgetSets.length === 0) return [row.key_hash as string];
      const [budgetKeys]: [Array<{ key_hash: string }>, number] = await tx.query(
        `UPDATE api_keys SET ${budgetSets.join(', ')} WHERE budget_id = $1 RETURNING key_hash`,
        budgetValues,
      );
      return budgetKeys.map((k) => k.key_hash);
    });
    if (!hashes) return null;
    await this.invalidate(hashes);
    return this.keys.findOneByOrFail({ id: keyId });
  }

  /**
   * A new key in place of `keyId`: same account, name, limit, expiry and models, and the same budget, so
   * the two share one month spend and one limit. The old key expires `graceS` seconds from now (or
   * earlier, when it was to expire before). Null for an unknown or revoked key.
   */
  async rotate(keyId: string, graceS: number): Promise<CreatedKey | null> {
    const [old] = await this.keys.query(`SELECT * FROM api_keys WHERE id = $1 AND revoked_at IS NULL`, [keyId]);
    if (!old) return null;
    const created = await this.insert(
      {
        accountId: old.account_id,
        name: old.name,
        monthlyLimitMicros: old.monthly_limit_micros,
        expiresAt: old.expires_at,
        models: old.models,
        rpm: old.rpm,
        tpm: old.tpm,
        budgetId: old.budget_id,
      },
      (tx) =>
        tx.query(`UPDATE api_keys SET expires_at = LEAST(COALESCE(expires_at, 'infinity'), now() + $2 * interval '1 second') WHERE id = $1`, [
          keyId,
          graceS,
        ]),
    );
    await this.invalidate([old.key_hash]);
    return created;
  }

  /** Spend this UTC month of each key budget (spent by any of its keys), in micro-USD. */
  async monthSpend(budgetIds: string[], month: string): Promise<Map<string, bigint>> {
    const rows: Array<{ budget_id: string; spend_micros: string }> = await this.keys.query(
      `SELECT budget_id, spend_micros FROM key_monthly_counters WHERE budget_id = ANY($1::uuid[]) AND month = $2`,
      [budgetIds, month],
    );
    return new Map(rows.map((r) => [r.budget_id, BigInt(r.spend_micros)]));
  }

  /**
   * Key id → the id of the key it was rotated to. A rotation adds a key to its predecessor's budget, so within a
   * budget each key's successor is the next one created.
   */
  async successors(budgetIds: string[]): Promise<Map<string, string>> {
    const rows: Array<{ id: string; next_id: string }> = await this.keys.query(
      `SELECT id, next_id FROM (
         SELECT id, lead(id) OVER (PARTITION BY budget_id ORDER BY created_at, id) AS next_id FROM api_keys WHERE budget_id = ANY($1::uuid[])
       ) chain WHERE next_id IS NOT NULL`,
      [budgetIds],
    );
    return new Map(rows.map((r) => [r.id, r.next_id]));
  }

  /** Every replica reads the account's keys again (their account's rate limits changed); after the change has committed. */
  async forgetAccount(accountId: string): Promise<void> {
    // One statement whatever the number of keys: each notice is the revocation's (the key is read again on its next use).
    const rows: Array<{ key_hash: string }> = await this.keys.query(
      `SELECT key_hash, pg_notify($2, key_hash) FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL`,
      [accountId, REVOCATION_CHANNEL],
    );
    for (const row of rows) this.forget(row.key_hash);
  }

  list(accountId: string): Promise<ApiKey[]> {
    return this.keys.find({ where: { accountId }, order: { createdAt: 'ASC' } });
  }

  /** Revokes a key and tells every replica to drop it from its cache. Returns null for an unknown key. */
  async revoke(keyId: string): Promise<ApiKey | null> {
    // TypeORM answers an UPDATE with [rows, affectedCount].
    const [rows]: [Array<{ key_hash: string }>, number] = await this.keys.query(
      `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING key_hash`,
      [keyId],
    );
    if (rows.length === 0) return null;
    await this.invalidate([rows[0].key_hash]);
    return this.keys.findOneByOrFail({ id: keyId });
  }

  /** Inserts a key (with `alongside` in the same transaction) and tells every replica of it. */
  private async insert(values: Partial<ApiKey>, alongside?: Alongside): Promise<CreatedKey> {
    const key = generateApiKey();
    const hash = hashApiKey(key);
    const row = await this.keys.manager.transaction(async (tx) => {
      if (alongside) await alongside(tx, key);
      const saved = await tx.save(tx.create(ApiKey, { ...values, keyHash: hash, displayPrefix: displayPrefix(key) }));
      // Delivered at commit: other replicas hear of the key once it can be read, never of a rolled-back one.
      await tx.query(`SELECT pg_notify($1, $2)`, [CREATION_CHANNEL, hash]);
      return saved;
    });
    // Clients use a new key at once, often on this replica: its own cache must not wait for the notice.
    this.learnCreated(hash);
    return { row: await this.keys.findOneByOrFail({ id: row.id }), key };
  }

  /** Drops these keys from every replica's cache (the revocation notice), so the next use reads them again. */
  private async invalidate(hashes: string[]): Promise<void> {
    for (const hash of hashes) {
      this.forget(hash);
      await this.keys.query(`SELECT pg_notify($1, $2)`, [REVOCATION_CHANNEL, hash]);
    }
  }

  private forget(hash: string): void {
    this.invalidations++;
    this.cache.delete(hash);
  }

  private learnCreated(hash: string): void {
    this.creations++;
    this.unknown.delete(hash);
  }
}
