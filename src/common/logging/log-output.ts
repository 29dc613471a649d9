import pino, { DestinationStream } from 'pino';
import { prettyFactory } from 'pino-pretty';
import { LogFormat } from '../../config/env';

/** Log lines are written to stdout in blocks of about this size… */
const STDOUT_BLOCK_BYTES = 4096;
/** …or at least this often, so that a quiet gateway's lines still appear promptly. */
const STDOUT_FLUSH_MS = 200;

/**
 * LOG_FORMAT when set; otherwise readable lines for a person at a terminal, and JSON lines for
 * everything else: a pipe, a file, a log collector, a container (whose stdout is not a terminal unless
 * it was started with `docker run -t`, that is, by a person watching).
 */
export function resolveLogFormat(configured: LogFormat | undefined, stdout: { isTTY?: boolean } = process.stdout): LogFormat {
  if (configured) return configured;
  return stdout.isTTY ? 'pretty' : 'json';
}

const destinations = new Map<LogFormat, DestinationStream>();

/**
 * The process's one stdout destination per format. Every logger of the process (start-up, Nest, the
 * access log) writes through it, so that their lines keep their order and never interleave.
 */
export function stdoutDestination(format: LogFormat): DestinationStream {
  let destination = destinations.get(format);
  if (!destination) {
    destination = format === 'pretty' ? prettyStdout() : bufferedStdout();
    destinations.set(format, destination);
  }
  return destination;
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

/**
 * One readable line per entry (`12:04:31.092 INFO: KeysService: message {fields}`), written at once:
 * this format is for a person at a terminal, where a line late by 200 ms or out of order with the
 * start-up banner (written with process.stdout.write) would confuse.
 */
function prettyStdout(): DestinationStream {
  const prettify = prettyFactory({
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,context',
    messageFormat: '{if context}{context}: {end}{msg}',
    singleLine: true,
  });
  return { write: (line: string) => void process.stdout.write(prettify(line)) };
}
