import pino, { DestinationStream, Logger } from 'pino';
import { Env, LogLevel } from '../../config/env';
import { resolveLogFormat, stdoutDestination } from './log-output';

/** The process's one pino logger (stdout), shared by Nest's logger and the access log. */
export const ROOT_LOGGER = Symbol('ROOT_LOGGER');

/**
 * Headers are never logged, so credentials (authorization, cookie, x-api-key) cannot reach the logs
 * and no redaction pass runs per line.
 */
export function createRootLogger(level: LogLevel, destination: DestinationStream): Logger {
  return pino({ level, serializers: { err: pino.stdSerializers.err } }, destination);
}

/** The process's logger as the environment asks for it: LOG_LEVEL, on stdout in LOG_FORMAT (or the one that suits stdout). */
export function rootLoggerFor(env: Pick<Env, 'logLevel' | 'logFormat'>): Logger {
  return createRootLogger(env.logLevel, stdoutDestination(resolveLogFormat(env.logFormat)));
}
