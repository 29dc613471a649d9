import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { mergeMap, Observable } from 'rxjs';
import { GatewayRequest } from '../common/http/gateway-request';
import { AuditAction, auditTarget } from './audit-action';
import { AuditService } from './audit.service';

/** The metadata under which @Audited names its action. */
export const AUDITED_ACTION = 'gateway:audited-action';

/**
 * Writes the audit row of an admin route marked @Audited once its handler has answered: a handler that throws (a 4xx,
 * or a failure) did nothing and leaves no row. The row is written before the answer is sent, so that a client that
 * reads the audit after its answer finds its action. The action is already committed when the row is written: a row
 * that cannot be written is logged as an error with the request id, and the answer stands (a 500 would tell the
 * operator that an action that was done had failed, and invite a second top-up).
 */
@Injectable()
export class AuditInterceptor implements NestInterceptor {
  private readonly logger = new Logger(AuditInterceptor.name);

  constructor(
    private readonly audit: AuditService,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const action = this.reflector.get<AuditAction>(AUDITED_ACTION, context.getHandler());
    const req = context.switchToHttp().getRequest<GatewayRequest>();
    return next.handle().pipe(
      mergeMap(async (answer: unknown) => {
        const routeId = (req.params as Record<string, string> | undefined)?.id;
        try {
          await this.audit.record(action, req.id, auditTarget(action, routeId, req.body, answer));
        } catch (err) {
          this.logger.error(
            { err, requestId: req.id, action },
            `The audit row of ${action} by request ${req.id} could not be written (the action was done): ${(err as Error).message}`,
          );
        }
        return answer;
      }),
    );
  }
}
