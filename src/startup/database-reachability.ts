import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { StartupError } from './startup-error';

/** How long a starting gateway waits for DATABASE_URL's server to accept a connection before giving up. */
export const DATABASE_START_WAIT_MS = 10_000;
const ATTEMPT_TIMEOUT_MS = 2_000;
const RETRY_DELAY_MS = 500;

/** Failures that a server still starting (or a network still coming up) produces: worth another try. */
const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', '57P03']);

type PgError = Error & { code?: string };

/**
 * Connects once to DATABASE_URL, retrying for up to `waitMs` while the server is not there yet, so
 * that a wrong or dead DATABASE_URL ends the start within a known time with a message naming it
 * (TypeORM alone would retry for about 30 s and then print its stack traces).
 */
export async function waitForDatabase(url: string, waitMs = DATABASE_START_WAIT_MS): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const timeout = Math.max(1, Math.min(ATTEMPT_TIMEOUT_MS, deadline - Date.now()));
    const client = new Client({ connectionString: url, connectionTimeoutMillis: timeout });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.end();
      return;
    } catch (err) {
      await client.end().catch(() => undefined);
      const failure = err as PgError;
      if (!isTransient(failure) || Date.now() + RETRY_DELAY_MS >= deadline) throw unusableDatabase(url, failure, waitMs);
      await sleep(RETRY_DELAY_MS);
    }
  }
}

function isTransient(err: PgError): boolean {
  return TRANSIENT_CODES.has(err.code ?? '') || /timeout/i.test(err.message);
}

function unusableDatabase(url: string, err: PgError, waitMs: number): StartupError {
  const where = `DATABASE_URL (${withoutPassword(url)})`;
  switch (err.code) {
    case '28P01':
    case '28000':
      return new StartupError(`The database server of ${where} refused the login: ${err.message}. Fix the user or password in DATABASE_URL.`);
    case '3D000':
      return new StartupError(`The database server of ${where} answers, but ${err.message}. Create it, or fix the database name in DATABASE_URL.`);
  }
  if (!isTransient(err)) return new StartupError(`Cannot use the database of ${where}: ${err.message}. Check DATABASE_URL.`);
  const reason = err.code && !err.message.includes(err.code) ? `${err.message} (${err.code})` : err.message;
  return new StartupError(
    `Cannot reach the database of ${where}: ${reason}; gave up after ${waitMs / 1000} s. ` +
      'Start PostgreSQL there or fix DATABASE_URL (unset it to use the embedded PostgreSQL).',
  );
}

/** The URL as the operator wrote it, with its password (if any) masked. */
function withoutPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}
