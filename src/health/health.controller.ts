import { Controller, Get, HttpCode } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ErrorCode, GatewayError } from '../errors';
import { Public } from '../common/decorators/public.decorator';
import { ApiRoute } from '../openapi/api-route.decorator';
import { jsonAnswer, status } from '../openapi/response-schemas';

@Public()
@Controller()
export class HealthController {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Liveness: the process is up and serving HTTP. */
  @Get('healthz')
  @HttpCode(200)
  @ApiRoute({ tag: 'operations', summary: 'Liveness: the process serves HTTP', auth: 'none', errors: [], success: jsonAnswer(200, 'Up', status) })
  health() {
    return { status: 'ok' };
  }

  /** Readiness: the database answers (503 service_unavailable with Retry-After when not). */
  @Get('readyz')
  @ApiRoute({ tag: 'operations', summary: 'Readiness: the database answers', auth: 'none', errors: [ErrorCode.ServiceUnavailable], success: jsonAnswer(200, 'Ready', status) })
  async ready() {
    try {
      await this.db.query('SELECT 1');
      return { status: 'ready' };
    } catch (err) {
      throw new GatewayError(ErrorCode.ServiceUnavailable, `Not ready: the database is unreachable (${(err as Error).message}).`);
    }
  }
}
