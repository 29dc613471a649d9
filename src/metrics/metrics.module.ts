import { Module } from '@nestjs/common';
import { AdminTokenModule } from '../admin-token/admin-token.module';
import { ModelsModule } from '../models/models.module';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

@Module({ imports: [AdminTokenModule, ModelsModule], controllers: [MetricsController], providers: [MetricsService], exports: [MetricsService] })
export class MetricsModule {}
