import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { DataSource } from 'typeorm';
import { Env } from '../config/env';
import { GatewayError } from '../errors';
import { AdminTokenThrottle } from './admin-token-throttle';
import { AdminTokenGuard } from './admin-token.guard';
import { AdminTokenService } from './admin-token.service';

const TOKEN = 'operator-token-0123456789abcdefghijklmnop';

function contextFor(authorization?: string, ip = '203.0.113.7') {
  const req = { ip, headers: authorization === undefined ? {} : { authorization } };
  return new ExecutionContextHost([req, {}]);
}

describe(AdminTokenGuard.name, () => {
  let sut: AdminTokenGuard;

  beforeEach(async () => {
    // With ADMIN_TOKEN set, the service never touches the database.
    const db = {} as DataSource;
    const tokens = new AdminTokenService({ adminToken: TOKEN } as Env, db);
    await tokens.onModuleInit();
    expect(tokens.generated).toBe(false);
    sut = new AdminTokenGuard(tokens, new AdminTokenThrottle({ maxFailures: 3, windowMs: 60_000, maxAddresses: 100 }));
  });

  it('accepts the configured token with the Bearer scheme', () => {
    expect(sut.canActivate(contextFor(`Bearer ${TOKEN}`))).toBe(true);
    expect(sut.canActivate(contextFor(`bearer ${TOKEN}`))).toBe(true);
  });

  it.each([
    ['no header', undefined],
    ['another scheme', `Basic ${TOKEN}`],
    ['no scheme', TOKEN],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, -1)}`],
    ['a longer token', `Bearer ${TOKEN}0`],
    ['another token of the same length', `Bearer ${TOKEN.replace('o', 'x')}`],
  ])('refuses %s with 401 invalid_admin_token', (_name, header) => {
    expect(() => sut.canActivate(contextFor(header))).toThrow(expect.objectContaining({ code: 'invalid_admin_token', status: 401 }));
  });

  describe('guessing', () => {
    const WRONG = `Bearer ${TOKEN.replace('o', 'x')}`;

    it('answers 429 rate_limit_exceeded with Retry-After once an address has had its tries', () => {
      for (let i = 0; i < 3; i++) expect(() => sut.canActivate(contextFor(WRONG))).toThrow(expect.objectContaining({ status: 401 }));
      let refusal: unknown;
      try {
        sut.canActivate(contextFor(WRONG));
      } catch (err) {
        refusal = err;
      }
      expect(refusal).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error', status: 429 });
      // Sent as Retry-After by the exception filter (test/guessing.e2e-spec.ts reads the header).
      expect((refusal as GatewayError).retryAfterS).toBeGreaterThanOrEqual(59);
      expect((refusal as GatewayError).retryAfterS).toBeLessThanOrEqual(60);
    });

    it('always lets the valid token through, even from a throttled address', () => {
      for (let i = 0; i < 5; i++) expect(() => sut.canActivate(contextFor(WRONG))).toThrow();
      expect(sut.canActivate(contextFor(`Bearer ${TOKEN}`))).toBe(true);
    });

    it('does not count requests without a token, nor throttle other addresses', () => {
      for (let i = 0; i < 5; i++) expect(() => sut.canActivate(contextFor(undefined))).toThrow(expect.objectContaining({ status: 401 }));
      expect(() => sut.canActivate(contextFor(WRONG))).toThrow(expect.objectContaining({ status: 401 }));
      for (let i = 0; i < 5; i++) expect(() => sut.canActivate(contextFor(WRONG))).toThrow();
      expect(() => sut.canActivate(contextFor(WRONG, '198.51.100.1'))).toThrow(expect.objectContaining({ status: 401 }));
      // A throttled address without a token still gets the plain 401 that tells it what to send.
      expect(() => sut.canActivate(contextFor(undefined))).toThrow(expect.objectContaining({ status: 401 }));
    });
  });
});
