import { Controller, Get, HttpCode, ServiceUnavailableException } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
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

  /** Readiness: the database answers. */
  @Get('readyz')
  async ready() {
    try {
      await this.db.query('SELECT 1');
      return { status: 'ready' };
    } catch {
      throw new ServiceUnavailableException('database unreachable');
    }
  }
}
