import { Global, Module } from '@nestjs/common';
import { PendingWrites } from './pending-writes';
import { UsageController } from './usage.controller';
import { UsageService } from './usage.service';

@Global()
@Module({ controllers: [UsageController], providers: [UsageService, PendingWrites], exports: [UsageService, PendingWrites] })
export class UsageModule {}
