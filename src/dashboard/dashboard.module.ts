import { Module } from '@nestjs/common';
import { AdminModule } from '../admin/admin.module';
import { DashboardController } from './dashboard.controller';
import { DashboardService } from './dashboard.service';

@Module({ imports: [AdminModule], controllers: [DashboardController], providers: [DashboardService] })
export class DashboardModule {}
