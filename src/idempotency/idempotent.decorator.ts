import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import { IDEMPOTENT_ROUTE, IdempotencyInterceptor } from './idempotency.interceptor';

/** The route takes an Idempotency-Key (docs/idempotency.md); `route` names it in the key's record (a key is for one route). */
export function Idempotent(route: string): MethodDecorator {
  return applyDecorators(
    SetMetadata(IDEMPOTENT_ROUTE, route),
    UseInterceptors(IdempotencyInterceptor),
    ApiHeader({
      name: 'Idempotency-Key',
      required: false,
      description: "1 to 255 visible ASCII characters: a repeat within 24 h gets the first answer again (idempotent-replayed: true), uncharged (docs/idempotency.md)",
    }),
  );
}
