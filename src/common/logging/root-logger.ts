import pino, { DestinationStream, Logger } from 'pino';
import { LogLevel } from '../../config/env';

/** The process's one pino logger (JSON lines on stdout), shared by Nest's logger and the access log. */
export const ROOT_LOGGER = Symbol('ROOT_LOGGER');

/** Log lines are written to stdout in blocks of about this size… */
const STDOUT_BLOCK_BYTES = 4096;
/** …or at least this often, so that a quiet gateway's lines still appear promptly. */
const STDOUT_FLUSH_MS = 200;

/**
 * Headers are never logged, so credentials (authorization, cookie, x-api-key) cannot reach the logs
 * and no redaction pass runs per line.
 */
export function createRootLogger(level: LogLevel, destination: DestinationStream = bufferedStdout()): Logger {
  return pino({ level, serializers: { err: pino.stdSerializers.err } }, destination);
}

/**
 * stdout written in blocks rather than one write(2) per line: an access line per request would
 * otherwise cost a system call (and a wake-up of the log reader) on the hot path. pino flushes the
 * buffer synchronously when the process exits, also on a crash; only a SIGKILL loses the last lines.
 */
function bufferedStdout(): DestinationStream {
  const stdout = pino.destination({ dest: 1, sync: false, minLength: STDOUT_BLOCK_BYTES });
  setInterval(() => stdout.flush(), STDOUT_FLUSH_MS).unref();
  return stdout;
}
