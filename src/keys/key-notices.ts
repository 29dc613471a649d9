import { Logger } from '@nestjs/common';
import { Client } from 'pg';
import { CONNECT_TIMEOUT_MS } from '../common/database/pool-settings';

/** A revoked (or rotated-out) key's hash: every replica drops it from its cache. */
export const REVOCATION_CHANNEL = 'api_key_revoked';
/** A created key's hash: every replica forgets that it did not know it (docs/decisions.md, "Guessing"). */
export const CREATION_CHANNEL = 'api_key_created';
const RECONNECT_DELAY_MS = 1_000;

/** What the key cache does with what it hears. */
export interface HeardNotices {
  revoked(hash: string): void;
  created(hash: string): void;
  /** Listening again after a break: notices sent meanwhile were missed. */
  missed(): void;
}

/**
 * The LISTEN side of the key cache's notices (PostgreSQL NOTIFY on REVOCATION_CHANNEL and CREATION_CHANNEL), on
 * one connection of its own, listened again every second after a break until it works.
 */
export class KeyNotices {
  private listener: Client | null = null;
  private closing = false;

  constructor(
    private readonly databaseUrl: string,
    private readonly logger: Logger,
    private readonly heard: HeardNotices,
  ) {}

  /** Whether notices are heard now (a creation made while not listening would be missed). */
  get listening(): boolean {
    return this.listener !== null;
  }

  async listen(): Promise<void> {
    const client = new Client({ connectionString: this.databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true });
    client.on('notification', (msg) => {
      if (!msg.payload) return;
      if (msg.channel === CREATION_CHANNEL) this.heard.created(msg.payload);
      else this.heard.revoked(msg.payload);
    });
    client.on('error', (err) => {
      this.logger.warn(`Revocation listener lost its connection: ${err.message}`);
      this.reconnect(client);
    });
    client.on('end', () => this.reconnect(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${REVOCATION_CHANNEL}; LISTEN ${CREATION_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    // Stopped while connecting: this connection would keep the process alive.
    if (this.closing) await client.end().catch(() => undefined);
    else this.listener = client;
  }

  async stop(): Promise<void> {
    this.closing = true;
    await this.listener?.end().catch(() => undefined);
  }

  /**
   * Listens again, every second until it works. Cached keys stay usable meanwhile (so requests that need no
   * database keep working through an outage); once listening again, the cache is told that it missed notices.
   */
  private reconnect(broken: Client): void {
    if (this.closing || this.listener !== broken) return;
    this.listener = null;
    setTimeout(() => {
      if (this.closing) return;
      this.listen().then(
        () => this.heard.missed(),
        (err: Error) => {
          this.logger.warn(`Revocation listener reconnect failed: ${err.message}`);
          this.listener = broken;
          this.reconnect(broken);
        },
      );
    }, RECONNECT_DELAY_MS).unref();
  }
}
