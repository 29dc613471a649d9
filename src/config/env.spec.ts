import 'reflect-metadata';
import { resolve } from 'node:path';
import { readEmbeddedPgEnv, readEnv } from './env';
import { ConfigError } from './gateway-config.loader';

describe('readEnv', () => {
  it('applies the defaults of DESIGN.md section 2', () => {
    expect(readEnv({})).toEqual({
      port: 8080,
      databaseUrl: undefined,
      redisUrl: undefined,
      adminToken: undefined,
      gatewayConfigPath: resolve('config/gateway.yaml'),
      logLevel: 'info',
      databasePoolMax: 10,
      billingPoolMax: 10,
      trustProxyHops: 0,
    });
  });

  it('reads every variable', () => {
    const sut = readEnv({
      PORT: '9000',
      DATABASE_URL: 'postgres://u:p@db:5432/gw',
      REDIS_URL: 'rediss://cache:6380',
      ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789',
      GATEWAY_CONFIG: '/etc/gateway.yaml',
      LOG_LEVEL: 'debug',
      LOG_FORMAT: 'pretty',
      DATABASE_POOL_MAX: '4',
      BILLING_POOL_MAX: '6',
      TRUST_PROXY_HOPS: '1',
    });
    expect(sut).toEqual({
      port: 9000,
      databaseUrl: 'postgres://u:p@db:5432/gw',
      redisUrl: 'rediss://cache:6380',
      adminToken: 'a-long-enough-admin-token-0123456789',
      gatewayConfigPath: '/etc/gateway.yaml',
      logLevel: 'debug',
      logFormat: 'pretty',
      databasePoolMax: 4,
      billingPoolMax: 6,
      trustProxyHops: 1,
    });
  });

  it('treats empty variables as unset', () => {
    expect(readEnv({ DATABASE_URL: '', REDIS_URL: '', ADMIN_TOKEN: '' })).toMatchObject({
      databaseUrl: undefined,
      redisUrl: undefined,
      adminToken: undefined,
    });
  });

  it.each([
    ['PORT', { PORT: 'abc' }],
    ['PORT', { PORT: '70000' }],
    ['PORT', { PORT: '-1' }],
    ['PORT', { PORT: '80.5' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['LOG_FORMAT', { LOG_FORMAT: 'text' }],
    ['DATABASE_URL', { DATABASE_URL: 'not a url' }],
    ['REDIS_URL', { REDIS_URL: 'localhost:6379' }],
    ['REDIS_URL', { REDIS_URL: 'http://cache:6379' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://db/gateway' }],
    ['ADMIN_TOKEN', { ADMIN_TOKEN: 'short' }],
    ['ADMIN_TOKEN', { ADMIN_TOKEN: 'x'.repeat(31) }],
    ['DATABASE_POOL_MAX', { DATABASE_POOL_MAX: '0' }],
    ['DATABASE_POOL_MAX', { DATABASE_POOL_MAX: '2.5' }],
    ['BILLING_POOL_MAX', { BILLING_POOL_MAX: 'ten' }],
    ['BILLING_POOL_MAX', { BILLING_POOL_MAX: '5000' }],
    ['TRUST_PROXY_HOPS', { TRUST_PROXY_HOPS: '-1' }],
    ['TRUST_PROXY_HOPS', { TRUST_PROXY_HOPS: 'true' }],
    ['TRUST_PROXY_HOPS', { TRUST_PROXY_HOPS: '11' }],
  ])('refuses a bad %s, naming it', (name, env) => {
    expect(() => readEnv(env)).toThrow(ConfigError);
    expect(() => readEnv(env)).toThrow(new RegExp(`^${name}: `));
  });

  it('accepts an ADMIN_TOKEN of exactly 32 characters and refuses 31 with a start-up message naming the minimum', () => {
    expect(readEnv({ ADMIN_TOKEN: 'x'.repeat(32) }).adminToken).toBe('x'.repeat(32));
    expect(() => readEnv({ ADMIN_TOKEN: 'secret-'.repeat(4) + 'abc' })).toThrow(
      /^ADMIN_TOKEN: must be at least 32 characters \(got 31\); generate one with: openssl rand -hex 24$/,
    );
  });

  it('never puts a secret in its error messages', () => {
    expect(() => readEnv({ DATABASE_URL: 'postgres://user:hunter2@ bad' })).toThrow(/^DATABASE_URL: not a valid URL \(expected postgres: or postgresql:\/\/\.\.\.\)$/);
  });
});

describe('readEmbeddedPgEnv', () => {
  it('defaults to .data/pg on port 54329', () => {
    expect(readEmbeddedPgEnv({})).toEqual({ dataDir: resolve('.data/pg'), port: 54329 });
  });

  it('takes EMBEDDED_PG_DIR and EMBEDDED_PG_PORT', () => {
    expect(readEmbeddedPgEnv({ EMBEDDED_PG_DIR: '/srv/pg', EMBEDDED_PG_PORT: '6543' })).toEqual({ dataDir: '/srv/pg', port: 6543 });
  });

  it.each(['0', 'abc', '65536'])('refuses EMBEDDED_PG_PORT=%s, naming it', (port) => {
    expect(() => readEmbeddedPgEnv({ EMBEDDED_PG_PORT: port })).toThrow(/^EMBEDDED_PG_PORT: /);
  });
});
