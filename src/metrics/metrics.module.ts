import { Global, Module } from '@nestjs/common';
import { AdminModule } from '../admin/admin.module';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

@Global()
@Module({ imports: [AdminModule], controllers: [MetricsController], providers: [MetricsService], exports: [MetricsService] })
export class MetricsModule {}
