import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ENV } from '../config/config.tokens';
import { Env } from '../config/env';

const SETTING_KEY = 'admin_token_sha256';
/**
 * The generated token in clear, kept from the statement that creates it until a start that listens has
 * shown it (then deleted): a start that fails before that, on a taken port say, loses nothing.
 */
export const UNSHOWN_ADMIN_TOKEN = 'unshown_admin_token';

function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/**
 * The admin bearer token: ADMIN_TOKEN when set, otherwise one generated on first start (its hash
 * is kept in the database so later starts and other replicas accept it; the token is shown once,
 * by the first start that listens: `FirstStartService.showUnshown`).
 */
@Injectable()
export class AdminTokenService implements OnModuleInit {
  private expectedHash: Buffer;

  constructor(
    @Inject(ENV) private readonly env: Env,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  async onModuleInit(): Promise<void> {
    if (this.env.adminToken) {
      this.expectedHash = sha256(this.env.adminToken);
      return;
    }
    const candidate = `gwadm_${randomBytes(24).toString('base64url')}`;
    // One statement: the token is never stored without the copy that waits to be shown.
    const rows: Array<{ value: string }> = await this.db.query(
      `WITH inserted AS (
         INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING value
       ), unshown AS (
         INSERT INTO settings (key, value) SELECT $3, $4 FROM inserted ON CONFLICT (key) DO NOTHING
       )
       SELECT value FROM inserted UNION ALL SELECT value FROM settings WHERE key = $1 LIMIT 1`,
      [SETTING_KEY, sha256(candidate).toString('hex'), UNSHOWN_ADMIN_TOKEN, candidate],
    );
    this.expectedHash = Buffer.from(rows[0].value, 'hex');
  }

  /** Whether the token in use is the generated one kept in the database (ADMIN_TOKEN unset). */
  get generated(): boolean {
    return !this.env.adminToken;
  }

  /** Constant-time comparison of the presented token's hash with the expected one. */
  matches(presented: string): boolean {
    return timingSafeEqual(sha256(presented), this.expectedHash);
  }
}
