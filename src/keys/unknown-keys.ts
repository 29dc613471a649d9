/**
 * Hashes of well-formed keys that the database did not know, remembered for a short time so that a
 * forged key (its checksum is public) costs one query, not one per request. Bounded: entries share
 * one TTL, so the map's insertion order is its expiry order and the first entry is always the one to drop.
 */
export class UnknownKeys {
  private readonly expiries = new Map<string, number>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  has(hash: string): boolean {
    const expiresAt = this.expiries.get(hash);
    if (expiresAt === undefined) return false;
    if (expiresAt > this.now()) return true;
    this.expiries.delete(hash);
    return false;
  }

  add(hash: string): void {
    const now = this.now();
    // Re-inserted, so that it moves to the end with its new expiry.
    this.expiries.delete(hash);
    for (const [oldest, expiresAt] of this.expiries) {
      if (expiresAt > now && this.expiries.size < this.maxEntries) break;
      this.expiries.delete(oldest);
    }
    this.expiries.set(hash, now + this.ttlMs);
  }

  delete(hash: string): void {
    this.expiries.delete(hash);
  }

  clear(): void {
    this.expiries.clear();
  }

  get size(): number {
    return this.expiries.size;
  }
}
