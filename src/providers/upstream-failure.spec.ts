import type { LoggerService } from '@nestjs/common';
import { ErrorCode } from '../errors';
import { countsAgainstDeployment, isRetryable } from '../routing/upstream-errors';
import { CredentialsRefused, logCredentialsRefused, UpstreamFailure, upstreamGatewayError } from './upstream-failure';

describe(upstreamGatewayError.name, () => {
  it("answers a refused credential 502 upstream_error with the gateway's message naming the provider", () => {
    const sut = upstreamGatewayError(new CredentialsRefused('openai', 401, 'invalid_api_key'), 'model');
    expect(sut).toMatchObject({ code: ErrorCode.UpstreamError, status: 502, retryAfterS: null });
    expect(sut.message).toBe('The upstream provider "openai" refused the gateway\'s credentials (HTTP 401); the operator must check the credentials configured for it.');
  });

  it("passes a 429 through with the upstream's Retry-After in whole seconds, and a 400 without one", () => {
    expect(upstreamGatewayError(new UpstreamFailure('rejected', 'slow down', 429, false, 6.2), 'model')).toMatchObject({ code: ErrorCode.UpstreamRejected, status: 429, retryAfterS: 7, message: 'slow down' });
    expect(upstreamGatewayError(new UpstreamFailure('rejected', 'bad', 400), 'model')).toMatchObject({ status: 400, retryAfterS: null });
  });

  it('makes a refused credential worth another deployment, and a failure of the deployment', () => {
    const sut = new CredentialsRefused('a', 403, null);
    expect([isRetryable(sut), countsAgainstDeployment(sut)]).toEqual([true, true]);
  });
});

describe(logCredentialsRefused.name, () => {
  const logger = () => {
    const lines: unknown[][] = [];
    const at = (level: string) => (...args: unknown[]) => void lines.push([level, ...args]);
    const sut: LoggerService = { log: at('info'), error: at('error'), warn: at('warn') };
    return { sut, lines };
  };

  it('logs a refused credential at error with the request id, the provider, the status and code, never a message', () => {
    const { sut, lines } = logger();
    logCredentialsRefused(sut, new CredentialsRefused('openai', 401, 'invalid_api_key'), 'req_1');
    expect(lines).toEqual([
      ['error', { requestId: 'req_1', provider: 'openai', upstreamStatus: 401, upstreamCode: 'invalid_api_key' }, expect.stringContaining('"openai" refused the gateway\'s credentials (HTTP 401, invalid_api_key) for request req_1')],
    ]);
  });

  it('logs nothing for other failures', () => {
    const { sut, lines } = logger();
    logCredentialsRefused(sut, new UpstreamFailure('rejected', 'Incorrect API key provided: sk-abc***xyz', 400), 'req_2');
    expect(lines).toEqual([]);
  });
});
