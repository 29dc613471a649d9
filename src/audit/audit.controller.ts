import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { Public } from '../common/decorators/public.decorator';
import { ErrorCode } from '../errors';
import { ApiRoute } from '../openapi/api-route.decorator';
import { jsonAnswer, object, orNull, string } from '../openapi/schemas';
import { AdminTokenGuard } from '../admin-token/admin-token.guard';
import { AUDIT_ACTIONS } from './audit-action';
import { AuditPage, AuditService } from './audit.service';
import { AuditQueryDto } from './dto/audit-query.dto';

const uuid = { type: 'string', format: 'uuid' };
const entry = object({
  id: { type: 'string', description: 'Increasing; pass it as `before` for the next page' },
  created_at: { type: 'string', format: 'date-time' },
  actor: { type: 'string', description: '`admin`: the one admin token has no name' },
  action: { type: 'string', enum: [...AUDIT_ACTIONS] },
  account_id: orNull(uuid),
  key_id: { ...orNull(uuid), description: 'The key acted on; for key.rotate, the new key (details.replaced_key_id: the old one)' },
  request_id: string,
  details: { type: 'object', additionalProperties: true, description: "The request body's fields; never a key's secret" },
});

/** Who did what in the admin API (DESIGN.md 12.5): the rows written by the routes marked @Audited. */
@Public()
@UseGuards(AdminTokenGuard)
@Controller('admin/v1/audit')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @ApiRoute({
    tag: 'admin',
    auth: 'admin_token',
    summary: 'The audit of admin actions that succeeded, newest first: who, what, on which account and key, with the request body',
    errors: [ErrorCode.InvalidRequest],
    success: jsonAnswer(200, 'A page of audit rows', object({ object: string, data: { type: 'array', items: entry }, has_more: { type: 'boolean' } })),
  })
  list(@Query() query: AuditQueryDto): Promise<AuditPage> {
    return this.audit.page({ accountId: query.account_id, limit: query.limit === undefined ? 50 : Number(query.limit), before: query.before });
  }
}
