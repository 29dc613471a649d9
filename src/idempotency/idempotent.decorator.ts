import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { IDEMPOTENT_ROUTE, IdempotencyInterceptor } from './idempotency.interceptor';

/** The route takes an Idempotency-Key (docs/idempotency.md); `route` names it in the key's record (a key is for one route). */
export function Idempotent(route: string): MethodDecorator {
  return applyDecorators(SetMetadata(IDEMPOTENT_ROUTE, route), UseInterceptors(IdempotencyInterceptor));
}
