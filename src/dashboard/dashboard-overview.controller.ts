import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { SchemaObject } from '@nestjs/swagger';
import { AdminTokenGuard } from '../admin-token/admin-token.guard';
import { Public } from '../common/decorators/public.decorator';
import { ErrorCode } from '../errors';
import { ApiRoute } from '../openapi/api-route.decorator';
import { jsonAnswer } from '../openapi/response-schemas';
import { number, object, orNull, string } from '../openapi/schemas';
import { usagePeriod } from '../usage/usage-period';
import { OverviewQueryDto } from './dto/overview-query.dto';
import { DEFAULT_LOW_CREDITS_MICROS, FLAGGED_ROWS, NEAR_LIMIT_SHARE, OverviewService, RANKED_ROWS } from './overview.service';

const integer: SchemaObject = { type: 'integer' };
const usd: SchemaObject = { type: 'string', pattern: '^-?\\d+\\.\\d{6}$' };

const overviewAccount = object(
  {
    id: string,
    name: string,
    requests: integer,
    failed: integer,
    error_rate: { ...number, description: 'failed / requests in the period, 4 decimals; 0 without requests' },
    cost_usd: usd,
    credits_usd: usd,
    reserved_usd: usd,
    month_spend_usd: { ...usd, description: 'Spend this UTC month, whatever the period' },
    monthly_limit_usd: orNull(usd),
    limit_used: orNull({ ...number, description: 'month_spend / monthly_limit, 4 decimals (1 for a zero limit); null without a limit' }),
    low_credits_usd: orNull(usd),
    payment_refusals: { ...integer, description: 'Requests answered 402 in the period' },
  },
  ['id', 'name', 'requests', 'failed', 'error_rate', 'cost_usd', 'credits_usd', 'reserved_usd', 'month_spend_usd', 'monthly_limit_usd', 'limit_used', 'low_credits_usd', 'payment_refusals'],
);
const accounts = (description: string): SchemaObject => ({ type: 'array', items: overviewAccount, description });

const overview = object(
  {
    object: { type: 'string', enum: ['overview'] },
    from: string,
    to: string,
    month: { ...string, description: 'The UTC month (YYYY-MM) of month_spend_usd and the limits' },
    totals: object(
      {
        accounts: { ...integer, description: 'All accounts' },
        active_accounts: { ...integer, description: 'Accounts with requests in the period' },
        requests: integer,
        failed: integer,
        payment_refusals: integer,
        cost_usd: usd,
        near_limit: { ...integer, description: 'Accounts near their monthly limit (the list shows at most 50)' },
        low_credits: { ...integer, description: 'Accounts low on credits (the list shows at most 50)' },
      },
      ['accounts', 'active_accounts', 'requests', 'failed', 'payment_refusals', 'cost_usd', 'near_limit', 'low_credits'],
    ),
    top_spenders: accounts(`The ${RANKED_ROWS} highest costs of the period (accounts with a cost)`),
    near_limit: accounts(`Accounts at ${NEAR_LIMIT_SHARE * 100}% or more of their monthly limit this UTC month, highest first, at most ${FLAGGED_ROWS}`),
    low_credits: accounts(
      `Accounts whose available credits (credits − reserved) are at or below their low_credits_usd, or, without one, at or below ` +
        `$${DEFAULT_LOW_CREDITS_MICROS / 1_000_000} while in use (requests in the period or spend this month); lowest first, at most ${FLAGGED_ROWS}`,
    ),
    highest_error_rate: accounts(`The ${RANKED_ROWS} highest error rates of the period among accounts with a failed request`),
  },
  ['object', 'from', 'to', 'month', 'totals', 'top_spenders', 'near_limit', 'low_credits', 'highest_error_rate'],
);

/** The dashboard's landing view: all accounts at a glance, over a period. */
@Public()
@Controller('dashboard/api')
export class DashboardOverviewController {
  constructor(private readonly overview: OverviewService) {}

  @Get('overview')
  @ApiRoute({
    tag: 'dashboard',
    summary: 'All accounts over a period: totals, top spenders, highest error rates, accounts near their monthly limit or low on credits',
    auth: 'admin_token',
    errors: [ErrorCode.InvalidRequest],
    success: jsonAnswer(200, 'The overview', overview),
  })
  @UseGuards(AdminTokenGuard)
  get(@Query() query: OverviewQueryDto) {
    return this.overview.overview(usagePeriod(query.from, query.to));
  }
}
