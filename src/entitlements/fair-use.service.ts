import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { GatewayRequest } from '../common/http/gateway-request';
import { monthKey } from '../common/month';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';

/** One included request taken from an account's allowance of one UTC month. */
export class FairUseGrant {
  returned = false;

  constructor(
    readonly accountId: string,
    readonly month: string,
  ) {}
}

/**
 * The monthly fair-use allowance shared by transcription and speech (DESIGN.md section 7): taken with one
 * conditional statement when a request is accepted, so concurrent requests can never exceed it, and given
 * back when the request fails.
 */
@Injectable()
export class FairUseService {
  private readonly logger = new Logger(FairUseService.name);
  private readonly grants = new WeakMap<GatewayRequest, FairUseGrant>();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /** Takes one request from this month's allowance; null when it is used up. */
  async consume(accountId: string, now = new Date()): Promise<FairUseGrant | null> {
    const month = monthKey(now);
    // The month's row is created on first use; the WHERE of DO UPDATE runs on the locked, current row.
    const rows: unknown[] = await this.db.query(
      `INSERT INTO monthly_counters (account_id, month, fair_use_used)
       SELECT $1, $2, 1 WHERE $3::integer > 0
       ON CONFLICT (account_id, month) DO UPDATE SET fair_use_used = monthly_counters.fair_use_used + 1
         WHERE monthly_counters.fair_use_used < $3::integer
       RETURNING fair_use_used`,
      [accountId, month, this.config.fair_use.monthly_requests],
    );
    return rows.length === 1 ? new FairUseGrant(accountId, month) : null;
  }

  /** Returns a grant to the month it was taken from (at most once). */
  async giveBack(grant: FairUseGrant): Promise<void> {
    if (grant.returned) return;
    grant.returned = true;
    await this.db.query(
      `UPDATE monthly_counters SET fair_use_used = fair_use_used - 1
        WHERE account_id = $1 AND month = $2 AND fair_use_used > 0`,
      [grant.accountId, grant.month],
    );
  }

  /** Remembers the grant a request holds, so that whoever sees the request fail can give it back. */
  attach(req: GatewayRequest, grant: FairUseGrant): void {
    this.grants.set(req, grant);
  }

  /** Gives back the request's grant, if it holds one; failures are logged, never thrown. */
  async giveBackFor(req: GatewayRequest): Promise<void> {
    const grant = this.grants.get(req);
    if (!grant) return;
    try {
      await this.giveBack(grant);
    } catch (err) {
      this.logger.error({ err, requestId: req.id }, `Could not give back the fair-use request of ${req.id}: ${(err as Error).message}`);
    }
  }
}
