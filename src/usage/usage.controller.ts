import { Controller, Get, Query, Req, UsePipes } from '@nestjs/common';
import { StrictValidationPipe } from '../common/validation/strict-validation.pipe';
import { UsageQueryDto } from '../admin/dto/admin.dto';
import { GatewayRequest } from '../common/http/gateway-request';
import { usagePeriod } from '../common/http/usage-period';
import { UsageService } from './usage.service';

/** An account holder's own usage, read with any of the account's API keys (never another account's). */
@Controller('v1/usage')
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  @Get()
  @UsePipes(StrictValidationPipe)
  async own(@Req() req: GatewayRequest, @Query() query: UsageQueryDto) {
    const accountId = req.auth!.accountId;
    return { account_id: accountId, ...(await this.usage.summary(accountId, usagePeriod(query.from, query.to))) };
  }
}
