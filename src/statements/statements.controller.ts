import { Controller, Get, Headers, Param, Query, Req, Res, UseGuards } from '@nestjs/common';
import { AdminTokenGuard } from '../admin-token/admin-token.guard';
import { Public } from '../common/decorators/public.decorator';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { UuidOrNotFoundPipe } from '../common/http/uuid-or-not-found.pipe';
import { ErrorCode } from '../errors';
import { ApiRoute } from '../openapi/api-route.decorator';
import { usagePeriod } from '../usage/usage-period';
import { StatementQueryDto } from './statement-query.dto';
import { StatementFormat, StatementService } from './statement.service';

const SUCCESS = {
  status: 200,
  description: 'Opening balance, every ledger movement of the period, closing balance (JSON, or CSV with one row each)',
  content: { 'application/json': { type: 'object' as const }, 'text/csv': { type: 'string' as const } },
};

/** CSV when asked by `format=csv`, or by an Accept header that names text/csv (and format is not json). */
function formatOf(query: StatementQueryDto, accept: string | undefined): StatementFormat {
  if (query.format) return query.format;
  return accept && /(^|,)\s*text\/csv\b/i.test(accept) ? 'csv' : 'json';
}

/** The calling key's account statement (never another account's). */
@Controller('v1/usage/statement')
export class StatementController {
  constructor(private readonly statements: StatementService) {}

  @Get()
  @ApiRoute({ tag: 'v1', summary: "The calling account's statement for a period: opening balance, ledger movements, closing balance", auth: 'api_key', errors: [ErrorCode.InvalidRequest], success: SUCCESS })
  async own(@Req() req: GatewayRequest, @Res() res: GatewayReply, @Query() query: StatementQueryDto, @Headers('accept') accept?: string): Promise<void> {
    const { from, to } = usagePeriod(query.from, query.to);
    await this.statements.write(res.raw, { accountId: req.auth!.accountId, from, to, format: formatOf(query, accept) });
  }
}

/** Any account's statement, for the operator. */
@Public()
@UseGuards(AdminTokenGuard)
@Controller('admin/v1/accounts')
export class AdminStatementController {
  constructor(private readonly statements: StatementService) {}

  @Get(':id/statement')
  @ApiRoute({ tag: 'admin', summary: "An account's statement for a period: opening balance, ledger movements, closing balance", auth: 'admin_token', errors: [ErrorCode.InvalidRequest, ErrorCode.NotFound], success: SUCCESS })
  async statement(@Param('id', UuidOrNotFoundPipe) id: string, @Res() res: GatewayReply, @Query() query: StatementQueryDto, @Headers('accept') accept?: string): Promise<void> {
    const { from, to } = usagePeriod(query.from, query.to);
    await this.statements.write(res.raw, { accountId: id, from, to, format: formatOf(query, accept) });
  }
}
