import { Module } from '@nestjs/common';
import { AdminTokenModule } from '../admin-token/admin-token.module';
import { WebhookDeliveryService } from './webhook-delivery.service';
import { WebhookOutbox } from './webhook-outbox';
import { WebhooksController } from './webhooks.controller';

/** Alerts as signed webhooks from the outbox (DESIGN.md 12.4); the settlements write the events (billing_raise_alerts). */
@Module({
  imports: [AdminTokenModule],
  controllers: [WebhooksController],
  providers: [WebhookOutbox, WebhookDeliveryService],
})
export class WebhooksModule {}
