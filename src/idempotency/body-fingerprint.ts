import { createHash } from 'node:crypto';
import { canonicalJson } from '../common/json/canonical-json';

/** What an Idempotency-Key's record holds of its request's body, and how a repeat's body is compared to it. */
export interface BodyFingerprint {
  /** SHA-256 (hex) of the body's canonical JSON: what a new record keeps. */
  hash: string;
  /** Whether a record's hash is of this same body. */
  matches(stored: string): boolean;
}

/**
 * The fingerprint of a parsed body (docs/idempotency.md): its canonical JSON, so that a retry that wrote the same JSON
 * again with its keys in another order or other spacing is the same body. Records written before issue 43 hold the
 * hash of JSON.stringify of the body as parsed; a body matches those too, computed only when the canonical hash
 * differs, so that a key in flight across the upgrade still replays (for its keep_s; after that no such record is left).
 */
export function bodyFingerprint(body: unknown): BodyFingerprint {
  const hash = sha256(canonicalJson(body));
  return { hash, matches: (stored) => stored === hash || stored === sha256(JSON.stringify(body)) };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
