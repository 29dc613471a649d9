import { Controller, Get, Res, UseGuards } from '@nestjs/common';
import { AdminTokenGuard } from '../admin-token/admin-token.guard';
import { Public } from '../common/decorators/public.decorator';
import { ApiRoute } from '../openapi/api-route.decorator';
import { MetricsService } from './metrics.service';
import { GatewayReply } from '../common/http/gateway-request';

/** Prometheus scrape endpoint; behind the admin token, not an API key. */
@Public()
@UseGuards(AdminTokenGuard)
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @ApiRoute({
    tag: 'operations',
    summary: 'Prometheus metrics (text exposition format)',
    auth: 'admin_token',
    errors: [],
    success: { status: 200, description: 'Metrics', content: { 'text/plain': { type: 'string' } } },
  })
  async scrape(@Res() res: GatewayReply): Promise<void> {
    const body = await this.metrics.scrape();
    res.code(200).type(this.metrics.contentType).send(body);
  }
}
