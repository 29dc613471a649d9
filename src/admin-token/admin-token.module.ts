import { Module } from '@nestjs/common';
import { AdminTokenThrottle } from './admin-token-throttle';
import { AdminTokenGuard } from './admin-token.guard';
import { AdminTokenService } from './admin-token.service';

/** The operator's token and its guard, for every operator route: the admin API, /metrics and the dashboard's data. */
@Module({
  providers: [
    AdminTokenService,
    // One count per replica, shared by every controller that uses AdminTokenGuard.
    { provide: AdminTokenThrottle, useFactory: () => new AdminTokenThrottle() },
    AdminTokenGuard,
  ],
  exports: [AdminTokenService, AdminTokenThrottle, AdminTokenGuard],
})
export class AdminTokenModule {}
