import { Global, Module } from '@nestjs/common';
import { ENV } from '../../config/config.tokens';
import { Env } from '../../config/env';
import { resolveLogFormat, stdoutDestination } from './log-output';
import { PinoNestLogger } from './pino-nest.logger';
import { createRootLogger, ROOT_LOGGER } from './root-logger';

@Global()
@Module({
  providers: [{ provide: ROOT_LOGGER, useFactory: (env: Env) => createRootLogger(env.logLevel, stdoutDestination(resolveLogFormat(env.logFormat))), inject: [ENV] }, PinoNestLogger],
  exports: [ROOT_LOGGER, PinoNestLogger],
})
export class LoggingModule {}
