import pino, { DestinationStream, Logger } from 'pino';
import { LogLevel } from '../../config/env';

/** The process's one pino logger (JSON lines on stdout), shared by Nest's logger and the access log. */
export const ROOT_LOGGER = Symbol('ROOT_LOGGER');

/**
 * Headers are never logged, so credentials (authorization, cookie, x-api-key) cannot reach the logs
 * and no redaction pass runs per line.
 */
export function createRootLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = { level, serializers: { err: pino.stdSerializers.err } };
  return destination ? pino(options, destination) : pino(options);
}
