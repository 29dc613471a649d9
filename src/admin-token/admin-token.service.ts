import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ENV } from '../config/config.tokens';
import { Env } from '../config/env';

const SETTING_KEY = 'admin_token_sha256';

function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/**
 * The admin bearer token: ADMIN_TOKEN when set, otherwise one generated on first start (its hash
 * is kept in the database so later starts and other replicas accept it; the token is shown once).
 */
@Injectable()
export class AdminTokenService implements OnModuleInit {
  private expectedHash: Buffer;
  /** Set only on the start that generated the token, so it can be printed once. */
  generatedToken: string | null = null;

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
    const rows: Array<{ value: string }> = await this.db.query(
      `WITH inserted AS (
         INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING value
       )
       SELECT value FROM inserted UNION ALL SELECT value FROM settings WHERE key = $1 LIMIT 1`,
      [SETTING_KEY, sha256(candidate).toString('hex')],
    );
    this.expectedHash = Buffer.from(rows[0].value, 'hex');
    if (this.expectedHash.equals(sha256(candidate))) this.generatedToken = candidate;
  }

  /** Constant-time comparison of the presented token's hash with the expected one. */
  matches(presented: string): boolean {
    return timingSafeEqual(sha256(presented), this.expectedHash);
  }
}
