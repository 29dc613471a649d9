import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { ErrorCode, GatewayError } from '../common/errors';
import { AdminTokenService } from './admin-token.service';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

@Injectable()
export class AdminTokenGuard implements CanActivate {
  constructor(private readonly tokens: AdminTokenService) {}

  canActivate(context: ExecutionContext): boolean {
    const header = context.switchToHttp().getRequest<Request>().headers.authorization ?? '';
    const match = BEARER.exec(header);
    if (!match || !this.tokens.matches(match[1])) {
      throw new GatewayError(ErrorCode.InvalidAdminToken, 'Missing or wrong admin token: send "Authorization: Bearer <ADMIN_TOKEN>".');
    }
    return true;
  }
}
