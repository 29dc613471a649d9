import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AuthContext, RateLimitValues } from '../common/http/gateway-request';
import { ENV, GATEWAY_CONFIG } from '../config/config.tokens';
import { Env } from '../config/env';
import { GatewayConfig } from '../config/gateway-config.schema';
import { RateLimitPair } from '../config/rate-limits.schema';
import { ErrorCode, GatewayError } from '../errors';
import { MetricsService } from '../metrics/metrics.service';
import { rateLimitHeaders } from './rate-limit-headers';
import { Refusal, WindowAnswer, WindowAsk, WindowStore, WindowStoreUnavailable } from './sliding-window';

/** The injection token of the WindowStore (Redis's or the process's). */
export const WINDOW_STORE = Symbol('WINDOW_STORE');

/** Who a request counts against: its key (its budget: a rotated key and its successor share one) and its account. */
export type RateSubject = Pick<AuthContext, 'accountId' | 'keyId' | 'budgetId' | 'rateLimits'>;

/** Where the x-ratelimit-* headers go (the route's response). */
export type HeaderSink = (name: string, value: string) => void;

/** An admitted request's tokens: trued up once, to what it used (0 for a failed request). */
export interface TokenAdmission {
  settle(tokens: number): void;
}

type Scope = 'key' | 'account';

/**
 * Requests and tokens per minute per key and per account (DESIGN.md 12.4): each request's check is one call to the
 * windows (one Redis round trip), the true-up a second, later one. docs/operations.md, "Rate limits".
 */
@Injectable()
export class RateLimiter implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RateLimiter.name);

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(WINDOW_STORE) private readonly store: WindowStore,
    @Inject(ENV) private readonly env: Env,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Says at start-up where the windows are counted, when the config sets limits (docs/operations.md, "Rate limits"):
   * a configuration without them (the embedded default) starts without the line, and a failed start of it prints
   * nothing at warn or above.
   */
  async onModuleInit(): Promise<void> {
    await this.store.ready();
    const { accounts, keys } = this.config.rate_limits;
    if (![accounts?.rpm, accounts?.tpm, keys?.rpm, keys?.tpm].some((limit) => limit !== undefined)) return;
    if (this.env.redisUrl) this.logger.log('Rate limits (rpm, tpm) are counted in Redis: exact across replicas');
    else this.logger.warn('Rate limits (rpm, tpm) are counted in this process (no REDIS_URL): each replica counts its own, so N replicas allow up to N times the limits');
  }

  onApplicationShutdown(): void {
    this.store.close();
  }

  /**
   * Counts a request holding `tokens` (its prompt estimate plus its output limit) against its key's and account's
   * limits, and writes the headers of the tightest. Over a limit: 429 rate_limit_exceeded, counted nowhere. Null
   * when no limit applies, or when the windows cannot be asked (the request goes on unlimited, as with the burst limit).
   */
  async admit(subject: RateSubject, tokens: number, header: HeaderSink): Promise<TokenAdmission | null> {
    const scopes: Scope[] = [];
    const asks: WindowAsk[] = [];
    for (const scope of ['key', 'account'] as const) {
      const ask = this.windowOf(subject, scope);
      if (ask.rpm === null && ask.tpm === null) continue;
      scopes.push(scope);
      asks.push(ask);
    }
    if (asks.length === 0) return null;
    const member = randomUUID();
    let answer;
    try {
      answer = await this.store.hit(asks, member, tokens);
    } catch (err) {
      if (!(err instanceof WindowStoreUnavailable)) throw err;
      this.metrics.rateLimitStoreFailed();
      return null;
    }
    for (const [name, value] of rateLimitHeaders(asks, answer.windows)) header(name, value);
    if (!answer.admitted) throw refusal(scopes, asks, answer.windows, tokens);
    return this.admission(asks.map((ask) => ask.key), member, tokens);
  }

  private windowOf(subject: RateSubject, scope: Scope): WindowAsk {
    // One hash slot per account (`{…}`): the key's window and the account's are in one script's reach on a Redis Cluster.
    const account = `rl:{${subject.accountId}}`;
    const own: RateLimitValues | undefined = subject.rateLimits?.[scope];
    const defaults: RateLimitPair | undefined = scope === 'key' ? this.config.rate_limits.keys : this.config.rate_limits.accounts;
    return {
      key: scope === 'key' ? `${account}:k:${subject.budgetId ?? subject.keyId}` : `${account}:a`,
      rpm: own?.rpm ?? defaults?.rpm ?? null,
      tpm: own?.tpm ?? defaults?.tpm ?? null,
    };
  }

  private admission(keys: string[], member: string, held: number): TokenAdmission {
    let settled = false;
    return {
      settle: (tokens) => {
        if (settled || tokens === held) return;
        settled = true;
        this.store.trueUp(keys, member, tokens).catch((err: Error) => {
          // Redis away: the breaker has said so. Anything else is a fault of ours.
          if (!(err instanceof WindowStoreUnavailable)) this.logger.error({ err }, `Rate-limit true-up failed: ${err.message}`);
        });
      },
    };
  }
}

const MEASURE: Record<Refusal, string> = { requests: 'requests', tokens: 'tokens', too_large: 'tokens' };

/**
 * The 429 of the window that keeps the request out the longest (every window must have room): it names the limit,
 * key or account, requests or tokens; a request larger than a whole tpm says it can never be admitted as it is.
 */
function refusal(scopes: Scope[], asks: WindowAsk[], windows: WindowAnswer[], tokens: number): GatewayError {
  let worst = -1;
  for (const [i, w] of windows.entries()) {
    if (w.refused === null) continue;
    if (worst < 0 || w.refused === 'too_large' || (windows[worst].refused !== 'too_large' && w.retryMs > windows[worst].retryMs)) worst = i;
  }
  const { refused, retryMs } = windows[worst];
  const whose = scopes[worst] === 'key' ? "this API key's" : "this account's";
  const limit = refused === 'requests' ? asks[worst].rpm : asks[worst].tpm;
  const retryAfterS = Math.max(1, Math.ceil(retryMs / 1000));
  const message =
    refused === 'too_large'
      ? `Request too large: it holds ${tokens} tokens (its prompt estimate plus its output limit), more than ${whose} whole limit of ${limit} tokens per minute, so it can never be admitted; lower max_tokens or shorten the prompt.`
      : `Rate limit reached: ${whose} limit of ${limit} ${MEASURE[refused!]} per minute${refused === 'tokens' ? ` (this request holds ${tokens}: its prompt estimate plus its output limit)` : ''}; retry after ${retryAfterS} s.`;
  return new GatewayError(ErrorCode.RateLimitExceeded, message, null, undefined, retryAfterS);
}
