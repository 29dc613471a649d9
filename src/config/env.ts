import { resolve } from 'node:path';
import { ConfigError } from './gateway-config.loader';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** `json`: one JSON object per line (pino's own format); `pretty`: one readable line per entry. */
export type LogFormat = 'json' | 'pretty';
const LOG_FORMATS: LogFormat[] = ['json', 'pretty'];

/** The operator contract of DESIGN.md section 2. Secrets are kept out of toString/logs. */
export interface Env {
  port: number;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  adminToken: string | undefined;
  gatewayConfigPath: string;
  logLevel: LogLevel;
  /** LOG_FORMAT; unset: decided by where stdout goes (resolveLogFormat). */
  logFormat?: LogFormat;
  /** Connections of TypeORM's pool (DATABASE_POOL_MAX); see the connection budget in docs/operations.md. */
  databasePoolMax: number;
  /** Connections of the billing pool (BILLING_POOL_MAX). */
  billingPoolMax: number;
  /**
   * Reverse proxies in front of the gateway whose X-Forwarded-For entry is trusted (TRUST_PROXY_HOPS):
   * 0 = the client address is the socket's, so a client cannot choose it by sending the header.
   */
  trustProxyHops: number;
}

const DEFAULT_POOL_MAX = 10;
const MAX_POOL_MAX = 1000;
/** A guessable admin token is the whole admin API: 32 characters of a random alphabet are out of reach. */
export const ADMIN_TOKEN_MIN_LENGTH = 32;
const MAX_TRUST_PROXY_HOPS = 10;

export function readEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const port = Number(source.PORT ?? '8080');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`PORT: must be an integer between 0 and 65535 (got ${JSON.stringify(source.PORT)})`);
  }
  const logLevel = (source.LOG_LEVEL ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(source.LOG_LEVEL)})`);
  }
  const logFormat = (source.LOG_FORMAT || undefined) as LogFormat | undefined;
  if (logFormat !== undefined && !LOG_FORMATS.includes(logFormat)) {
    throw new ConfigError(`LOG_FORMAT: must be one of ${LOG_FORMATS.join(', ')}, or unset (got ${JSON.stringify(source.LOG_FORMAT)})`);
  }
  const schemes = { DATABASE_URL: ['postgres:', 'postgresql:'], REDIS_URL: ['redis:', 'rediss:'] };
  for (const [name, allowed] of Object.entries(schemes)) {
    const value = source[name];
    // The value itself is never echoed: it may carry a password.
    if (value && !isUrl(value, allowed)) throw new ConfigError(`${name}: not a valid URL (expected ${allowed.join(' or ')}//...)`);
  }
  const adminToken = source.ADMIN_TOKEN || undefined;
  if (adminToken !== undefined && adminToken.length < ADMIN_TOKEN_MIN_LENGTH) {
    // The length is safe to name; the token itself is never echoed.
    throw new ConfigError(
      `ADMIN_TOKEN: must be at least ${ADMIN_TOKEN_MIN_LENGTH} characters (got ${adminToken.length}); generate one with: openssl rand -hex 24`,
    );
  }
  return {
    port,
    databaseUrl: source.DATABASE_URL || undefined,
    redisUrl: source.REDIS_URL || undefined,
    adminToken,
    gatewayConfigPath: resolve(source.GATEWAY_CONFIG || 'config/gateway.yaml'),
    logLevel,
    logFormat,
    databasePoolMax: poolSize(source, 'DATABASE_POOL_MAX'),
    billingPoolMax: poolSize(source, 'BILLING_POOL_MAX'),
    trustProxyHops: trustProxyHops(source.TRUST_PROXY_HOPS),
  };
}

function trustProxyHops(raw: string | undefined): number {
  if (!raw) return 0;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || value > MAX_TRUST_PROXY_HOPS) {
    throw new ConfigError(`TRUST_PROXY_HOPS: must be an integer between 0 and ${MAX_TRUST_PROXY_HOPS} (got ${JSON.stringify(raw)})`);
  }
  return value;
}

function poolSize(source: NodeJS.ProcessEnv, name: 'DATABASE_POOL_MAX' | 'BILLING_POOL_MAX'): number {
  const raw = source[name];
  if (!raw) return DEFAULT_POOL_MAX;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || value < 1 || value > MAX_POOL_MAX) {
    throw new ConfigError(`${name}: must be an integer between 1 and ${MAX_POOL_MAX} (got ${JSON.stringify(raw)})`);
  }
  return value;
}

export interface EmbeddedPgEnv {
  dataDir: string;
  port: number;
}

export const DEFAULT_EMBEDDED_PG_PORT = 54329;

/** Where the embedded PostgreSQL (used when DATABASE_URL is unset) keeps its data and listens. */
export function readEmbeddedPgEnv(source: NodeJS.ProcessEnv = process.env): EmbeddedPgEnv {
  const port = source.EMBEDDED_PG_PORT ? Number(source.EMBEDDED_PG_PORT) : DEFAULT_EMBEDDED_PG_PORT;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new ConfigError(`EMBEDDED_PG_PORT: must be an integer between 1 and 65535 (got ${JSON.stringify(source.EMBEDDED_PG_PORT)})`);
  }
  return { dataDir: resolve(source.EMBEDDED_PG_DIR || '.data/pg'), port };
}

function isUrl(value: string, schemes: string[]): boolean {
  try {
    return schemes.includes(new URL(value).protocol);
  } catch {
    return false;
  }
}
