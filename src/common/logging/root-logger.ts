import pino, { DestinationStream, Logger } from 'pino';
import { LogLevel } from '../../config/env';
import { stdoutDestination } from './log-output';

/** The process's one pino logger (stdout), shared by Nest's logger and the access log. */
export const ROOT_LOGGER = Symbol('ROOT_LOGGER');

/**
 * Headers are never logged, so credentials (authorization, cookie, x-api-key) cannot reach the logs
 * and no redaction pass runs per line.
 */
export function createRootLogger(level: LogLevel, destination: DestinationStream = stdoutDestination('json')): Logger {
  return pino({ level, serializers: { err: pino.stdSerializers.err } }, destination);
}
