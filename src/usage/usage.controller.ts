import { Controller, Get, Query, Req } from '@nestjs/common';
import { ErrorCode } from '../errors';
import { GatewayRequest } from '../common/http/gateway-request';
import { ApiRoute } from '../openapi/api-route.decorator';
import { jsonAnswer, usageSummary } from '../openapi/response-schemas';
import { UsageQueryDto } from './dto/usage-query.dto';
import { usagePeriod } from './usage-period';
import { UsageReportService } from './usage-report.service';

/** An account holder's own usage, read with any of the account's API keys (never another account's). */
@Controller('v1/usage')
export class UsageController {
  constructor(private readonly usage: UsageReportService) {}

  @Get()
  @ApiRoute({
    tag: 'v1',
    summary: "The calling account's usage per key, per model and per day, and its latest requests",
    auth: 'api_key',
    errors: [ErrorCode.InvalidRequest],
    success: jsonAnswer(200, "Usage summary of the key's account", usageSummary),
  })
  async own(@Req() req: GatewayRequest, @Query() query: UsageQueryDto) {
    const accountId = req.auth!.accountId;
    return { account_id: accountId, ...(await this.usage.summary(accountId, usagePeriod(query.from, query.to))) };
  }
}
