import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { IS_PUBLIC } from '../common/decorators/public.decorator';
import { ErrorCode, GatewayError } from '../errors';
import { GatewayRequest } from '../common/http/gateway-request';
import { KeysService } from './keys.service';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The global guard: every route needs a valid API key unless marked @Public(). */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: KeysService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) {
      return true;
    }
    const req = context.switchToHttp().getRequest<GatewayRequest>();
    const header = req.headers.authorization;
    if (!header) throw invalidKey('Missing API key: send it as "Authorization: Bearer <API_KEY>".');
    const match = BEARER.exec(header);
    if (!match) throw invalidKey('Invalid Authorization header: use the Bearer scheme with an API key.');
    const auth = await this.keys.authenticate(match[1]);
    if (!auth) throw invalidKey('Invalid API key: it is malformed, unknown or revoked.');
    req.auth = { accountId: auth.accountId, keyId: auth.keyId, budgetId: auth.budgetId, limited: auth.limited, models: auth.models };
    return true;
  }
}

function invalidKey(message: string): GatewayError {
  return new GatewayError(ErrorCode.InvalidApiKey, message);
}
