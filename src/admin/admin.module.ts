import { Module } from '@nestjs/common';
import { AdminTokenGuard } from './admin-token.guard';
import { AdminTokenService } from './admin-token.service';
import { AdminController } from './admin.controller';
import { AdminService } from './admin.service';
import { DemoSeedService } from './demo-seed.service';

@Module({
  controllers: [AdminController],
  providers: [AdminTokenService, AdminTokenGuard, AdminService, DemoSeedService],
  exports: [AdminTokenService, AdminTokenGuard, AdminService, DemoSeedService],
})
export class AdminModule {}
