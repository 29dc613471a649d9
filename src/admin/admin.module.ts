import { Module } from '@nestjs/common';
import { AdminTokenThrottle } from './admin-token-throttle';
import { AdminTokenGuard } from './admin-token.guard';
import { AdminTokenService } from './admin-token.service';
import { AdminController } from './admin.controller';
import { AdminService } from './admin.service';
import { DemoSeedService } from './demo-seed.service';

@Module({
  controllers: [AdminController],
  providers: [
    AdminTokenService,
    // One count per replica, shared by every controller that uses AdminTokenGuard.
    { provide: AdminTokenThrottle, useFactory: () => new AdminTokenThrottle() },
    AdminTokenGuard,
    AdminService,
    DemoSeedService,
  ],
  exports: [AdminTokenService, AdminTokenThrottle, AdminTokenGuard, AdminService, DemoSeedService],
})
export class AdminModule {}
