import { Module } from '@nestjs/common';
import { AdminTokenModule } from '../admin-token/admin-token.module';
import { AuditController } from './audit.controller';
import { AuditInterceptor } from './audit.interceptor';
import { AuditService } from './audit.service';

/**
 * The audit of admin actions (DESIGN.md 12.5, docs/operations.md "Audit of admin actions"): AdminModule imports it for
 * the interceptor behind @Audited; GET /admin/v1/audit lists the rows.
 */
@Module({
  imports: [AdminTokenModule],
  controllers: [AuditController],
  providers: [AuditService, AuditInterceptor],
  exports: [AuditService, AuditInterceptor],
})
export class AuditModule {}
