import { Controller, Get, Param, Query, Res, UseGuards } from '@nestjs/common';
import { ApiExcludeEndpoint } from '@nestjs/swagger';
import { AdminTokenGuard } from '../admin-token/admin-token.guard';
import { Public } from '../common/decorators/public.decorator';
import { ErrorCode, GatewayError } from '../errors';
import { ApiRoute } from '../openapi/api-route.decorator';
import { jsonAnswer, usageRequest } from '../openapi/response-schemas';
import { object, string } from '../openapi/schemas';
import { UuidOrNotFoundPipe } from '../common/http/uuid-or-not-found.pipe';
import { usagePeriod } from '../usage/usage-period';
import { DashboardAsset, loadDashboardAssets } from './dashboard.assets';
import { DashboardService } from './dashboard.service';
import { AccountSearchQueryDto } from './dto/account-search.dto';
import { LatestRequestsQueryDto } from './dto/latest-requests-query.dto';
import { GatewayReply } from '../common/http/gateway-request';

// The page holds no data: it signs in with the admin token (kept in sessionStorage) and reads the admin API.
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

// The usage view's request, with its key's name and prefix: two keys of one name are told apart by their prefix.
const dashboardRequest = object({
  ...usageRequest.properties,
  key_name: { type: 'string', nullable: true, description: "The key's name (null: it has none)" },
  key_prefix: { type: 'string', description: "The key's display prefix (sk-gw-…)" },
});

const requestsPage = object({
  object: { type: 'string', enum: ['list'] },
  data: { type: 'array', items: dashboardRequest },
  has_more: { type: 'boolean' },
});

/** The usage dashboard at /dashboard: a static page, the account picker's list and pages of latest requests. */
@Public()
@Controller('dashboard')
export class DashboardController {
  private readonly assets = loadDashboardAssets();

  constructor(private readonly dashboard: DashboardService) {}

  @Get()
  @ApiExcludeEndpoint()
  page(@Res() res: GatewayReply): void {
    this.send(res, this.assets.get('index.html')!);
  }

  @Get('assets/:file')
  @ApiExcludeEndpoint()
  asset(@Param('file') file: string, @Res() res: GatewayReply): void {
    const asset = file === 'index.html' ? undefined : this.assets.get(file);
    if (!asset) throw new GatewayError(ErrorCode.NotFound, `No dashboard asset ${file}.`);
    this.send(res, asset);
  }

  @Get('api/accounts')
  @ApiRoute({
    tag: 'dashboard',
    summary: "The dashboard's account picker: newest accounts first, or those whose name contains q or whose id is q",
    auth: 'admin_token',
    errors: [ErrorCode.InvalidRequest],
    success: jsonAnswer(200, 'At most 500 accounts', { type: 'array', items: object({ id: string, name: string, created_at: string }) }),
  })
  @UseGuards(AdminTokenGuard)
  accounts(@Query() query: AccountSearchQueryDto) {
    return this.dashboard.findAccounts(query.q);
  }

  @Get('api/accounts/:id/requests')
  @ApiRoute({
    tag: 'dashboard',
    summary: "One page of an account's requests in the period, newest first; the filters given narrow it, and keep paging with after",
    auth: 'admin_token',
    errors: [ErrorCode.InvalidRequest, ErrorCode.NotFound],
    success: jsonAnswer(200, 'A page of requests', requestsPage),
  })
  @UseGuards(AdminTokenGuard)
  requests(@Param('id', UuidOrNotFoundPipe) id: string, @Query() query: LatestRequestsQueryDto) {
    const page = { after: query.after, limit: query.limit === undefined ? undefined : Number(query.limit) };
    const filters = {
      status: query.status,
      code: query.code,
      keyId: query.key_id,
      model: query.model,
      endpoint: query.endpoint,
      streamed: query.streamed === undefined ? undefined : query.streamed === 'true',
      requestId: query.request_id,
    };
    return this.dashboard.requests(id, usagePeriod(query.from, query.to), page, filters);
  }

  private send(res: GatewayReply, asset: DashboardAsset): void {
    res
      .code(200)
      .headers({
        'Content-Type': asset.contentType,
        'Content-Security-Policy': CONTENT_SECURITY_POLICY,
        'Cache-Control': 'no-cache',
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
      })
      .send(asset.body);
  }
}
