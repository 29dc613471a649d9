import { AuthContext } from '../common/http/gateway-request';

/** A key in a replica's cache: what a request sees of it, until `expiresAt` (ms since the epoch). */
export interface CachedKey extends AuthContext {
  expiresAt: number;
  /** When the key itself expires (ms since the epoch), checked at every use; null: never. */
  keyExpiresAt: number | null;
}

/** A cached key as a request sees it; null once the key has expired (checked at every use, so on every replica at once). */
export function usable(entry: CachedKey): AuthContext | null {
  return entry.keyExpiresAt !== null && entry.keyExpiresAt <= Date.now() ? null : entry;
}

/**
 * The look-up of a key that is not revoked, by its hash. Its account's own rate limits ride along: the cache serves
 * them to every request (src/rate-limits/), and a change of them is heard as a revocation of the account's keys.
 */
export const KEY_LOOKUP = `
  SELECT k.id, k.account_id, k.budget_id, k.monthly_limit_micros, k.expires_at, k.models, k.rpm, k.tpm,
         a.rpm AS account_rpm, a.tpm AS account_tpm
    FROM api_keys k JOIN accounts a ON a.id = k.account_id
   WHERE k.key_hash = $1 AND k.revoked_at IS NULL`;

/** What KEY_LOOKUP reads. */
export interface KeyRow {
  id: string;
  account_id: string;
  budget_id: string;
  monthly_limit_micros: string | null;
  expires_at: Date | null;
  models: string[] | null;
  rpm: number | null;
  tpm: number | null;
  account_rpm: number | null;
  account_tpm: number | null;
}

export function cachedKey(row: KeyRow, expiresAt: number): CachedKey {
  return {
    accountId: row.account_id,
    keyId: row.id,
    budgetId: row.budget_id,
    limited: row.monthly_limit_micros !== null,
    models: row.models,
    rateLimits: { key: { rpm: row.rpm, tpm: row.tpm }, account: { rpm: row.account_rpm, tpm: row.account_tpm } },
    expiresAt,
    keyExpiresAt: row.expires_at?.getTime() ?? null,
  };
}
