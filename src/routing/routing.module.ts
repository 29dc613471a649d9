import { Module } from '@nestjs/common';
import { AdminTokenModule } from '../admin-token/admin-token.module';
import { MetricsModule } from '../metrics/metrics.module';
import { ProvidersModule } from '../providers/providers.module';
import { UpstreamRouter } from './upstream-router';
import { UpstreamsController } from './upstreams.controller';

@Module({
  imports: [AdminTokenModule, ProvidersModule, MetricsModule],
  controllers: [UpstreamsController],
  providers: [UpstreamRouter],
  exports: [UpstreamRouter],
})
export class RoutingModule {}
