import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerRequest } from '@nestjs/throttler';
import { GatewayReply, GatewayRequest } from '../common/http/gateway-request';
import { BurstStoreUnavailable } from './burst-store-unavailable';

/**
 * The per-account chat burst limit (limits.chat_burst). Runs after the global ApiKeyGuard, so the
 * tracker is the authenticated account: every key of an account shares one budget, whatever its IP.
 */
@Injectable()
export class AccountThrottlerGuard extends ThrottlerGuard {
  protected async getTracker(req: Record<string, unknown>): Promise<string> {
    const accountId = (req as unknown as GatewayRequest).auth?.accountId;
    // Unreachable behind ApiKeyGuard; kept so a misconfigured route never shares one global bucket.
    return accountId ? `account:${accountId}` : `ip:${String((req as unknown as GatewayRequest).ip)}`;
  }

  /**
   * One counter per account for every route behind this guard (chat, Responses, Messages and its count_tokens):
   * the routes that bridge onto chat share chat's budget, rather than each adding its own (ThrottlerGuard's
   * default keys by controller and handler). Not hashed: one hash less per request, and an operator can read
   * whose counter it is.
   */
  protected generateKey(_context: ExecutionContext, tracker: string, throttlerName: string): string {
    return `chat:${throttlerName}:${tracker}`;
  }

  /**
   * X-RateLimit-* (and a 429's Retry-After) on Node's response rather than Fastify's reply: a streamed answer
   * writes its status line there, and Fastify merges these into what `reply.send` sends as well.
   */
  protected setResponseHeader(res: Record<string, unknown>, name: string, value: string | number): void {
    (res as unknown as GatewayReply).raw.setHeader(name, value);
  }

  /**
   * A counter store outage (Redis down or hung: BurstStoreUnavailable) lets requests through rather than
   * failing every chat call. The storage decides when Redis is away (its RedisBreaker), and counts and logs
   * that, not once per request here. Anything else (a refusal over the limit, a bug of ours) goes on to the
   * exception filter: a bug is a 500 internal_error, logged with the request id and counted, never a limit
   * silently lifted.
   */
  protected async handleRequest(requestProps: ThrottlerRequest): Promise<boolean> {
    try {
      return await super.handleRequest(requestProps);
    } catch (err) {
      if (err instanceof BurstStoreUnavailable) return true;
      throw err;
    }
  }
}
