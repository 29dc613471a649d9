import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { GatewayError } from '../errors';
import { ApiKeyGuard } from './api-key.guard';
import { KeysService } from './keys.service';

const KEY = 'gwk_0123456789012345678901234567890123456789012abcdef';

function contextFor(headers: Record<string, string>) {
  const req: Record<string, unknown> = { headers };
  const res = {};
  const handler = () => undefined;
  class Controller {}
  return { req, res, context: new ExecutionContextHost([req, res], Controller, handler) };
}

describe(ApiKeyGuard.name, () => {
  let reflector: { getAllAndOverride: jest.Mock };
  let keys: { authenticate: jest.Mock };
  let sut: ApiKeyGuard;

  beforeEach(() => {
    reflector = { getAllAndOverride: jest.fn().mockReturnValue(undefined) };
    keys = { authenticate: jest.fn() };
    sut = new ApiKeyGuard(reflector as unknown as Reflector, keys as unknown as KeysService);
  });

  it('lets a @Public() route through without looking at any key', async () => {
    reflector.getAllAndOverride.mockReturnValue(true);
    const { context } = contextFor({});
    await expect(sut.canActivate(context)).resolves.toBe(true);
    expect(keys.authenticate).not.toHaveBeenCalled();
  });

  it('authenticates a Bearer key and attaches the account', async () => {
    keys.authenticate.mockResolvedValue({ accountId: 'acc', keyId: 'key' });
    const { req, context } = contextFor({ authorization: `Bearer ${KEY}` });
    await expect(sut.canActivate(context)).resolves.toBe(true);
    expect(keys.authenticate).toHaveBeenCalledWith(KEY);
    expect(req.auth).toEqual({ accountId: 'acc', keyId: 'key' });
  });

  it.each([
    ['no header', {}],
    ['the Basic scheme', { authorization: `Basic ${KEY}` }],
    ['a bare key', { authorization: KEY }],
    ['an empty Bearer', { authorization: 'Bearer ' }],
    ['two tokens', { authorization: `Bearer ${KEY} ${KEY}` }],
  ])('refuses %s with invalid_api_key before any look-up', async (_name, headers) => {
    const { context } = contextFor(headers);
    await expect(sut.canActivate(context)).rejects.toMatchObject({ code: 'invalid_api_key', status: 401 });
    expect(keys.authenticate).not.toHaveBeenCalled();
  });

  it('refuses a key the service does not know', async () => {
    keys.authenticate.mockResolvedValue(null);
    const { req, context } = contextFor({ authorization: `Bearer ${KEY}` });
    const failure = sut.canActivate(context);
    await expect(failure).rejects.toBeInstanceOf(GatewayError);
    await expect(failure).rejects.toMatchObject({ code: 'invalid_api_key' });
    expect(req.auth).toBeUndefined();
  });
});
