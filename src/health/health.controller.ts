import { Controller, Get, HttpCode } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ErrorCode, GatewayError } from '../common/errors';
import { Public } from '../common/decorators/public.decorator';

@Public()
@Controller()
export class HealthController {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Liveness: the process is up and serving HTTP. */
  @Get('healthz')
  @HttpCode(200)
  health() {
    return { status: 'ok' };
  }

  /** Readiness: the database answers (503 service_unavailable with Retry-After when not). */
  @Get('readyz')
  async ready() {
    try {
      await this.db.query('SELECT 1');
      return { status: 'ready' };
    } catch (err) {
      throw new GatewayError(ErrorCode.ServiceUnavailable, `Not ready: the database is unreachable (${(err as Error).message}).`);
    }
  }
}
