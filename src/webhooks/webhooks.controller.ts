import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { Public } from '../common/decorators/public.decorator';
import { ErrorCode } from '../errors';
import { ApiRoute } from '../openapi/api-route.decorator';
import { jsonAnswer, object, orNull, string } from '../openapi/schemas';
import { AdminTokenGuard } from '../admin-token/admin-token.guard';
import { DELIVERY_STATUSES, DeliveriesQueryDto } from './dto/deliveries-query.dto';
import { DeliveryView, WebhookOutbox } from './webhook-outbox';

const nullable = (type: 'integer' | 'string') => orNull({ type });
const delivery = object({
  id: string,
  event_id: string,
  type: string,
  url: string,
  status: { type: 'string', enum: [...DELIVERY_STATUSES] },
  attempts: { type: 'integer' },
  last_status: nullable('integer'),
  last_error: nullable('string'),
  created_at: string,
  last_attempt_at: nullable('string'),
  next_attempt_at: nullable('string'),
  delivered_at: nullable('string'),
  data: { type: 'object', additionalProperties: true },
});

/** The operator's view of webhook deliveries (DESIGN.md 12.4): what was sent, what is retried, what was given up. */
@Public()
@UseGuards(AdminTokenGuard)
@Controller('admin/v1/webhooks')
export class WebhooksController {
  constructor(private readonly outbox: WebhookOutbox) {}

  @Get('deliveries')
  @ApiRoute({
    tag: 'admin',
    auth: 'admin_token',
    summary: 'Recent webhook deliveries, newest first: delivered, pending (with the next attempt) and failed ones, with their last error',
    errors: [ErrorCode.InvalidRequest],
    success: jsonAnswer(200, 'The deliveries', object({ object: string, data: { type: 'array', items: delivery } })),
  })
  async deliveries(@Query() query: DeliveriesQueryDto): Promise<{ object: 'list'; data: DeliveryView[] }> {
    return { object: 'list', data: await this.outbox.recent(query.limit ?? 50, query.status) };
  }
}
