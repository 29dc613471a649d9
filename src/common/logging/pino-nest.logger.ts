import { Inject, Injectable, LoggerService } from '@nestjs/common';
import type { Level, Logger } from 'pino';
import { ROOT_LOGGER } from './root-logger';

const STACK = /\n\s*at /;

/**
 * Nest's own start-up narration (modules loaded, routes mapped, application started): about forty
 * lines a person does not need at each start, so they are logged at debug rather than info.
 */
const FRAMEWORK_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

/**
 * Where Nest logs an error that it then throws to its caller (the app is created with `abortOnError:
 * false`): a module that fails to initialise, a port `listen` cannot take. main.ts receives the error and
 * prints the one line of a failed start; the framework's copy of it is debug.
 */
const RETHROWN_CONTEXTS = new Set(['ExceptionHandler', 'NestApplication']);

/**
 * Nest's LoggerService over the root pino logger. Nest's `Logger` appends its context as the last
 * argument, so `logger.error({ err, requestId }, 'message')` arrives here as
 * `({ err, requestId }, 'message', 'Context')` and `logger.error('message', stack)` as
 * `('message', stack, 'Context')`.
 */
@Injectable()
export class PinoNestLogger implements LoggerService {
  constructor(@Inject(ROOT_LOGGER) private readonly pino: Logger) {}

  log(message: unknown, ...params: unknown[]): void {
    const context = params[params.length - 1];
    this.write(typeof context === 'string' && FRAMEWORK_CONTEXTS.has(context) ? 'debug' : 'info', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    const context = params[params.length - 1];
    this.write(typeof context === 'string' && RETHROWN_CONTEXTS.has(context) ? 'debug' : 'error', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const fields: Record<string, unknown> = {};
    let rest = params;
    const last = params[params.length - 1];
    // A stack passed without a context (`Logger.error(message, stack)`) is not a context.
    if (typeof last === 'string' && !STACK.test(last)) {
      fields.context = last;
      rest = params.slice(0, -1);
    }
    if (message instanceof Error) {
      fields.err = message;
      this.pino[level](fields, typeof rest[0] === 'string' ? rest[0] : message.message);
    } else if (typeof message === 'object' && message !== null) {
      Object.assign(fields, message);
      this.pino[level](fields, typeof rest[0] === 'string' ? rest[0] : undefined);
    } else {
      const text = String(message);
      const stack = rest[0];
      const isStack = typeof stack === 'string' && (level === 'error' || level === 'fatal' || STACK.test(stack));
      if (isStack) fields.err = errorWithStack(text, stack);
      this.pino[level](fields, text);
    }
  }
}

function errorWithStack(message: string, stack: string): Error {
  const err = new Error(message);
  err.stack = stack;
  return err;
}
