import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { AuditAction } from './audit-action';
import { AUDITED_ACTION, AuditInterceptor } from './audit.interceptor';

/**
 * The admin route writes one audit row named `action` when it succeeds (docs/operations.md "Audit of admin actions").
 * Its module imports AuditModule, which provides the interceptor.
 */
export function Audited(action: AuditAction): MethodDecorator {
  return applyDecorators(SetMetadata(AUDITED_ACTION, action), UseInterceptors(AuditInterceptor));
}
