import { Global, Module } from '@nestjs/common';
import { ENV } from '../../config/config.tokens';
import { Env } from '../../config/env';
import { PinoNestLogger } from './pino-nest.logger';
import { ROOT_LOGGER, rootLoggerFor } from './root-logger';

@Global()
@Module({
  providers: [{ provide: ROOT_LOGGER, useFactory: (env: Env) => rootLoggerFor(env), inject: [ENV] }, PinoNestLogger],
  exports: [ROOT_LOGGER, PinoNestLogger],
})
export class LoggingModule {}
