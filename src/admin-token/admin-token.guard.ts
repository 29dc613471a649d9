import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ErrorCode, GatewayError } from '../errors';
import { AdminTokenThrottle } from './admin-token-throttle';
import { AdminTokenService } from './admin-token.service';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * The admin API, /metrics and the dashboard API. The valid token always passes, even from a
 * throttled address (an operator sharing an address with a guesser keeps working); a wrong one is
 * 401, and 429 once its address has had its tries (AdminTokenThrottle).
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  constructor(
    private readonly tokens: AdminTokenService,
    private readonly throttle: AdminTokenThrottle,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    const match = BEARER.exec(req.headers.authorization ?? '');
    if (match && this.tokens.matches(match[1])) return true;
    // Only a presented token is a guess: a request without one (a dashboard not signed in yet) is not counted.
    if (match) {
      const retryAfter = this.throttle.retryAfterSeconds(req.ip);
      if (retryAfter !== null) {
        throw new GatewayError(
          ErrorCode.RateLimitExceeded,
          'Too many wrong admin tokens from this address; retry after the Retry-After delay.',
          null,
          undefined,
          retryAfter,
        );
      }
      this.throttle.recordFailure(req.ip);
    }
    throw new GatewayError(ErrorCode.InvalidAdminToken, 'Missing or wrong admin token: send "Authorization: Bearer <ADMIN_TOKEN>".');
  }
}
