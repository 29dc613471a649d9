import { Controller, Get, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { AdminTokenGuard } from '../admin/admin-token.guard';
import { Public } from '../common/decorators/public.decorator';
import { MetricsService } from './metrics.service';

/** Prometheus scrape endpoint; behind the admin token, not an API key. */
@Public()
@UseGuards(AdminTokenGuard)
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  async scrape(@Res() res: Response): Promise<void> {
    const body = await this.metrics.scrape();
    res.status(200).setHeader('Content-Type', this.metrics.contentType);
    res.end(body);
  }
}
