import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { IS_PUBLIC } from '../common/decorators/public.decorator';
import { ErrorCode, GatewayError } from '../errors';
import { GatewayRequest } from '../common/http/gateway-request';
import { KeysService } from './keys.service';
import { ACCEPTS_X_API_KEY } from './x-api-key.decorator';

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
    const acceptsXApiKey = this.reflector.getAllAndOverride<boolean>(ACCEPTS_X_API_KEY, [context.getHandler(), context.getClass()]) === true;
    const auth = await this.keys.authenticate(presentedKey(req, acceptsXApiKey));
    if (!auth) throw invalidKey('Invalid API key: it is malformed, unknown or revoked.');
    req.auth = { accountId: auth.accountId, keyId: auth.keyId, budgetId: auth.budgetId, limited: auth.limited, models: auth.models, rateLimits: auth.rateLimits };
    return true;
  }
}

/** The key of the Authorization header (Bearer), else, where the route accepts it, of the x-api-key header. */
function presentedKey(req: GatewayRequest, acceptsXApiKey: boolean): string {
  const header = req.headers.authorization;
  const xApiKey = acceptsXApiKey ? req.headers['x-api-key'] : undefined;
  if (!header && typeof xApiKey === 'string') return xApiKey.trim();
  if (!header) {
    throw invalidKey(acceptsXApiKey ? 'Missing API key: send it as "x-api-key: <API_KEY>" or "Authorization: Bearer <API_KEY>".' : 'Missing API key: send it as "Authorization: Bearer <API_KEY>".');
  }
  const match = BEARER.exec(header);
  if (!match) throw invalidKey('Invalid Authorization header: use the Bearer scheme with an API key.');
  return match[1];
}

function invalidKey(message: string): GatewayError {
  return new GatewayError(ErrorCode.InvalidApiKey, message);
}
