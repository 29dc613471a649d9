import { Controller, Get, UseGuards } from '@nestjs/common';
import type { SchemaObject } from '@nestjs/swagger';
import { AdminTokenGuard } from '../admin-token/admin-token.guard';
import { Public } from '../common/decorators/public.decorator';
import { ApiRoute } from '../openapi/api-route.decorator';
import { jsonAnswer } from '../openapi/response-schemas';
import { UpstreamRouter } from './upstream-router';

const upstreamList: SchemaObject = {
  type: 'object',
  properties: {
    data: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          model: { type: 'string' },
          deployment: { type: 'string', description: 'provider/upstream_model' },
          priority: { type: 'integer' },
          weight: { type: 'number' },
          routed: { type: 'boolean', description: 'false for a model with one provider/upstream_model pair (no retries, no circuit)' },
          state: { type: 'string', enum: ['closed', 'open', 'half-open'] },
          in_flight: { type: 'integer' },
          recent_calls: { type: 'integer' },
          error_rate: { type: 'number', nullable: true, description: 'failed share of the last 100 calls' },
          latency_ms: { type: 'integer', nullable: true, description: 'mean latency of the last 100 calls' },
        },
      },
    },
  },
};

/** This replica's view of every upstream deployment (docs/operations.md, "Upstream routing"). */
@Public()
@UseGuards(AdminTokenGuard)
@Controller('admin/v1')
export class UpstreamsController {
  constructor(private readonly router: UpstreamRouter) {}

  @Get('upstreams')
  @ApiRoute({
    tag: 'admin',
    auth: 'admin_token',
    summary: "Every model's upstream deployments on this replica: circuit state, requests in flight, recent error rate and latency",
    errors: [],
    success: jsonAnswer(200, 'The deployments', upstreamList),
  })
  list() {
    return { data: this.router.status() };
  }
}
