import { Controller, Get, Param, Query, Res, UseGuards, UsePipes } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { StrictValidationPipe } from '../common/validation/strict-validation.pipe';
import { Public } from '../common/decorators/public.decorator';
import { ErrorCode, GatewayError } from '../common/errors';
import { DashboardAsset, loadDashboardAssets } from './dashboard.assets';
import { DashboardService } from './dashboard.service';
import { AccountSearchQueryDto } from './dto/account-search.dto';

// The page holds no data: it signs in with the admin token (kept in sessionStorage) and reads the admin API.
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/** The usage dashboard at /dashboard: a static page plus the account picker's list. */
@ApiExcludeController()
@Public()
@Controller('dashboard')
export class DashboardController {
  private readonly assets = loadDashboardAssets();

  constructor(private readonly dashboard: DashboardService) {}

  @Get()
  page(@Res() res: Response): void {
    this.send(res, this.assets.get('index.html')!);
  }

  @Get('assets/:file')
  asset(@Param('file') file: string, @Res() res: Response): void {
    const asset = file === 'index.html' ? undefined : this.assets.get(file);
    if (!asset) throw new GatewayError(ErrorCode.NotFound, `No dashboard asset ${file}.`);
    this.send(res, asset);
  }

  @Get('api/accounts')
  @UseGuards(AdminTokenGuard)
  @UsePipes(StrictValidationPipe)
  accounts(@Query() query: AccountSearchQueryDto) {
    return this.dashboard.findAccounts(query.q);
  }

  private send(res: Response, asset: DashboardAsset): void {
    res
      .status(200)
      .set({
        'Content-Type': asset.contentType,
        'Content-Security-Policy': CONTENT_SECURITY_POLICY,
        'Cache-Control': 'no-cache',
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
      })
      .end(asset.body);
  }
}
