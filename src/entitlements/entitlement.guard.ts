import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Account } from '../billing/account.entity';
import { ErrorCode, GatewayError } from '../errors';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { FairUseService } from './fair-use.service';
import { isEntitled } from './subscription.service';

export type IncludedFeatureName = 'transcription' | 'speech';

export const INCLUDED_FEATURE = 'gateway:includedFeature';
/** Marks a route as an included feature: it needs an entitlement and takes one fair-use request. */
export const IncludedFeature = (feature: IncludedFeatureName) => SetMetadata(INCLUDED_FEATURE, feature);

/**
 * DESIGN.md section 5 step 4, before any body is read: 402 subscription_required, then 402
 * fair_use_limit_reached. The request taken from the allowance is given back when the response is not
 * a complete 2xx. Credits are never read.
 */
@Injectable()
export class EntitlementGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly fairUse: FairUseService,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const feature = this.reflector.getAllAndOverride<IncludedFeatureName | undefined>(INCLUDED_FEATURE, [context.getHandler(), context.getClass()]);
    if (!feature) return true;
    const http = context.switchToHttp();
    const req = http.getRequest<GatewayRequest>();
    const accountId = req.auth!.accountId;

    const account = await this.db.getRepository(Account).findOne({
      where: { id: accountId },
      select: { id: true, subscriptionStatus: true, subscriptionEndsAt: true },
    });
    if (!account || !isEntitled(account)) {
      throw new GatewayError(
        ErrorCode.SubscriptionRequired,
        `The ${feature} endpoint is included in a paid subscription or its 14-day trial, and this account has neither active; credits do not apply.`,
      );
    }
    const grant = await this.fairUse.consume(accountId);
    if (!grant) {
      throw new GatewayError(
        ErrorCode.FairUseLimitReached,
        'The monthly fair-use allowance of transcription and speech requests is used up; it resets at 00:00 UTC on the first of next month.',
      );
    }
    this.fairUse.attach(req, grant);
    const res = http.getResponse<GatewayReply>().raw;
    res.once('close', () => {
      const succeeded = res.writableFinished && res.statusCode >= 200 && res.statusCode < 300;
      if (!succeeded) void this.fairUse.giveBackFor(req);
    });
    return true;
  }
}
