import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { DataSource } from 'typeorm';
import { Env } from '../config/env';
import { AdminTokenGuard } from './admin-token.guard';
import { AdminTokenService } from './admin-token.service';

const TOKEN = 'operator-token-0123456789';

function contextFor(authorization?: string) {
  const req = { headers: authorization === undefined ? {} : { authorization } };
  return new ExecutionContextHost([req, {}]);
}

describe(AdminTokenGuard.name, () => {
  let sut: AdminTokenGuard;

  beforeEach(async () => {
    // With ADMIN_TOKEN set, the service never touches the database.
    const db = {} as DataSource;
    const tokens = new AdminTokenService({ adminToken: TOKEN } as Env, db);
    await tokens.onModuleInit();
    expect(tokens.generatedToken).toBeNull();
    sut = new AdminTokenGuard(tokens);
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
});
