import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query, UseGuards } from '@nestjs/common';
import { Public } from '../common/decorators/public.decorator';
import { ErrorCode } from '../errors';
import { ApiRoute, ApiRouteOptions } from '../openapi/api-route.decorator';
import { account, adminUsageSummary, createdKey, jsonAnswer, keyObject } from '../openapi/response-schemas';
import { CatalogService } from '../models/catalog.service';
import { JsonBodyGuard } from '../common/guards/json-body.guard';
import { parseIsoDate } from '../common/iso-date';
import { usdToMicros } from '../common/money';
import { UuidOrNotFoundPipe } from '../common/http/uuid-or-not-found.pipe';
import { AdminTokenGuard } from '../admin-token/admin-token.guard';
import { Audited } from '../audit/audited.decorator';
import { AdminService } from './admin.service';
import { UsageQueryDto } from '../usage/dto/usage-query.dto';
import { usagePeriod } from '../usage/usage-period';
import { AddCreditsDto, CreateAccountDto, CreateKeyDto, RotateKeyDto, SpendingLimitDto, SubscriptionDto, UpdateAccountDto, UpdateKeyDto } from './dto/admin.dto';
import { keyControls } from './key-controls';

const BODY_ERRORS = [ErrorCode.InvalidJson, ErrorCode.InvalidRequest, ErrorCode.PayloadTooLarge];
const AdminRoute = (summary: string, errors: ErrorCode[], success: ApiRouteOptions['success']) =>
  ApiRoute({ tag: 'admin', auth: 'admin_token', summary, errors, success });

/** The operator API (DESIGN.md section 4). Authenticated with the admin token, not an API key. */
@Public()
@UseGuards(AdminTokenGuard, JsonBodyGuard)
@Controller('admin/v1')
export class AdminController {
  constructor(
    private readonly admin: AdminService,
    private readonly catalog: CatalogService,
  ) {}

  @Post('accounts')
  @AdminRoute('Create an account (no credits, no spending limit, no subscription)', BODY_ERRORS, jsonAnswer(201, 'The account', account))
  @Audited('account.create')
  createAccount(@Body() body: CreateAccountDto) {
    return this.admin.createAccount(body.name);
  }

  @Get('accounts/:id')
  @AdminRoute('Show an account: credits, reserved, monthly limit and spend, subscription, fair use', [ErrorCode.NotFound], jsonAnswer(200, 'The account', account))
  getAccount(@Param('id', UuidOrNotFoundPipe) id: string) {
    return this.admin.account(id);
  }

  @Patch('accounts/:id')
  @AdminRoute("Change an account's own rate limits: rpm, tpm (null: back to the default), and low_credits_usd (null: none)", [...BODY_ERRORS, ErrorCode.NotFound], jsonAnswer(200, 'The account', account))
  @Audited('account.update')
  updateAccount(@Param('id', UuidOrNotFoundPipe) id: string, @Body() body: UpdateAccountDto) {
    const lowCredits = body.low_credits_usd === undefined ? undefined : body.low_credits_usd === null ? null : usdToMicros(body.low_credits_usd);
    return this.admin.updateAccount(id, { rpm: body.rpm, tpm: body.tpm, lowCreditsMicros: lowCredits });
  }

  @Post('accounts/:id/keys')
  @AdminRoute(
    'Create an API key, with its monthly limit, expiry and models; the full key is shown only in this answer',
    [...BODY_ERRORS, ErrorCode.NotFound],
    jsonAnswer(201, 'The key', createdKey),
  )
  @Audited('key.create')
  createKey(@Param('id', UuidOrNotFoundPipe) id: string, @Body() body: CreateKeyDto, @Body('models') models: unknown) {
    return this.admin.createKey(id, keyControls(body, models, this.catalog));
  }

  @Get('accounts/:id/keys')
  @AdminRoute("List an account's keys, without secrets", [ErrorCode.NotFound], jsonAnswer(200, 'The keys', { type: 'object', properties: { object: { type: 'string' }, data: { type: 'array', items: keyObject } } }))
  listKeys(@Param('id', UuidOrNotFoundPipe) id: string) {
    return this.admin.listKeys(id);
  }

  @Patch('keys/:id')
  @AdminRoute('Change the named controls of a key: name, monthly limit, expiry, models, rpm, tpm (null clears one)', [...BODY_ERRORS, ErrorCode.NotFound], jsonAnswer(200, 'The key', keyObject))
  @Audited('key.update')
  updateKey(@Param('id', UuidOrNotFoundPipe) id: string, @Body() body: UpdateKeyDto, @Body('models') models: unknown) {
    return this.admin.updateKey(id, keyControls(body, models, this.catalog));
  }

  @Post('keys/:id/rotate')
  @AdminRoute(
    'Replace a key by a new one sharing its limit, month spend, expiry and models; the old key works grace_s more seconds',
    [...BODY_ERRORS, ErrorCode.NotFound],
    jsonAnswer(201, 'The new key', createdKey),
  )
  @Audited('key.rotate')
  rotateKey(@Param('id', UuidOrNotFoundPipe) id: string, @Body() body: RotateKeyDto) {
    return this.admin.rotateKey(id, body.grace_s ?? 0);
  }

  @Delete('keys/:id')
  @AdminRoute('Revoke a key (refused by every replica within 2 s)', [ErrorCode.NotFound], jsonAnswer(200, 'The revoked key', { type: 'object' }))
  @Audited('key.revoke')
  revokeKey(@Param('id', UuidOrNotFoundPipe) id: string) {
    return this.admin.revokeKey(id);
  }

  @Post('accounts/:id/credits')
  @AdminRoute('Add credits', [...BODY_ERRORS, ErrorCode.NotFound], jsonAnswer(200, 'The account', account))
  @HttpCode(200)
  @Audited('account.credits')
  addCredits(@Param('id', UuidOrNotFoundPipe) id: string, @Body() body: AddCreditsDto) {
    return this.admin.addCredits(id, body.amount_usd);
  }

  @Put('accounts/:id/spending-limit')
  @AdminRoute('Set or clear (null) the monthly spending limit', [...BODY_ERRORS, ErrorCode.NotFound], jsonAnswer(200, 'The account', account))
  @Audited('account.spending_limit')
  setSpendingLimit(@Param('id', UuidOrNotFoundPipe) id: string, @Body() body: SpendingLimitDto) {
    return this.admin.setSpendingLimit(id, body.monthly_limit_usd);
  }

  @Put('accounts/:id/subscription')
  @AdminRoute(
    'Set the subscription: trial (14 days, once per account), active (until ends_at or changed) or none',
    [...BODY_ERRORS, ErrorCode.NotFound],
    jsonAnswer(200, 'The account', account),
  )
  @Audited('account.subscription')
  setSubscription(@Param('id', UuidOrNotFoundPipe) id: string, @Body() body: SubscriptionDto) {
    return this.admin.setSubscription(id, body.status, body.ends_at ? parseIsoDate(body.ends_at) : null);
  }

  @Get('accounts/:id/usage')
  @AdminRoute('Usage of an account per key, per model and per day, and its latest requests', [ErrorCode.InvalidRequest, ErrorCode.NotFound], jsonAnswer(200, 'Usage summary', adminUsageSummary))
  usage(@Param('id', UuidOrNotFoundPipe) id: string, @Query() query: UsageQueryDto) {
    return this.admin.usage(id, usagePeriod(query.from, query.to));
  }
}
