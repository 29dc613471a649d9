import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, UseGuards, UsePipes } from '@nestjs/common';
import { Public } from '../common/decorators/public.decorator';
import { JsonBodyGuard } from '../common/guards/json-body.guard';
import { usagePeriod } from '../common/http/usage-period';
import { parseIsoDate } from '../common/iso-date';
import { UuidOrNotFoundPipe } from '../common/http/uuid-or-not-found.pipe';
import { AdminTokenGuard } from './admin-token.guard';
import { AdminService } from './admin.service';
import { StrictValidationPipe } from '../common/validation/strict-validation.pipe';
import { AddCreditsDto, CreateAccountDto, CreateKeyDto, SpendingLimitDto, SubscriptionDto, UsageQueryDto } from './dto/admin.dto';

/** The operator API (DESIGN.md section 4). Authenticated with the admin token, not an API key. */
@Public()
@UseGuards(AdminTokenGuard, JsonBodyGuard)
@UsePipes(StrictValidationPipe)
@Controller('admin/v1')
export class AdminController {
  constructor(private readonly admin: AdminService) {}

  @Post('accounts')
  createAccount(@Body() body: CreateAccountDto) {
    return this.admin.createAccount(body.name);
  }

  @Get('accounts/:id')
  getAccount(@Param('id', UuidOrNotFoundPipe) id: string) {
    return this.admin.account(id);
  }

  @Post('accounts/:id/keys')
  createKey(@Param('id', UuidOrNotFoundPipe) id: string, @Body() body: CreateKeyDto) {
    return this.admin.createKey(id, body.name ?? null);
  }

  @Get('accounts/:id/keys')
  listKeys(@Param('id', UuidOrNotFoundPipe) id: string) {
    return this.admin.listKeys(id);
  }

  @Delete('keys/:id')
  revokeKey(@Param('id', UuidOrNotFoundPipe) id: string) {
    return this.admin.revokeKey(id);
  }

  @Post('accounts/:id/credits')
  @HttpCode(200)
  addCredits(@Param('id', UuidOrNotFoundPipe) id: string, @Body() body: AddCreditsDto) {
    return this.admin.addCredits(id, body.amount_usd);
  }

  @Put('accounts/:id/spending-limit')
  setSpendingLimit(@Param('id', UuidOrNotFoundPipe) id: string, @Body() body: SpendingLimitDto) {
    return this.admin.setSpendingLimit(id, body.monthly_limit_usd);
  }

  @Put('accounts/:id/subscription')
  setSubscription(@Param('id', UuidOrNotFoundPipe) id: string, @Body() body: SubscriptionDto) {
    return this.admin.setSubscription(id, body.status, body.ends_at ? parseIsoDate(body.ends_at) : null);
  }

  @Get('accounts/:id/usage')
  usage(@Param('id', UuidOrNotFoundPipe) id: string, @Query() query: UsageQueryDto) {
    return this.admin.usage(id, usagePeriod(query.from, query.to));
  }
}
