import { Logger } from '@nestjs/common';
import { LogLevel } from '../../config/env';
import { PinoNestLogger } from './pino-nest.logger';
import { createRootLogger } from './root-logger';

function setup(level: LogLevel = 'trace') {
  const lines: Record<string, any>[] = [];
  const sut = new PinoNestLogger(createRootLogger(level, { write: (line: string) => void lines.push(JSON.parse(line)) }));
  Logger.overrideLogger(sut);
  return { sut, lines };
}

describe(PinoNestLogger.name, () => {
  it('logs the code base style, fields first then the message, with the Nest context and the error stack', () => {
    const { lines } = setup();
    const err = new TypeError('boom');
    new Logger('GatewayExceptionFilter').error({ err, requestId: 'req_1' }, 'Unhandled error in request req_1: boom');

    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 50,
      context: 'GatewayExceptionFilter',
      requestId: 'req_1',
      msg: 'Unhandled error in request req_1: boom',
      err: { type: 'TypeError', message: 'boom', stack: err.stack },
    });
  });

  it('logs the plain Nest style: a message and the context', () => {
    const { lines } = setup();
    new Logger('BurstLimit').log('Redis for burst-limit counters is back');
    new Logger('KeysService').warn('Revocation listener lost its connection');
    Logger.log('Mapped {/v1/models, GET} route', 'RouterExplorer');

    expect(lines).toEqual([
      expect.objectContaining({ level: 30, context: 'BurstLimit', msg: 'Redis for burst-limit counters is back' }),
      expect.objectContaining({ level: 40, context: 'KeysService', msg: 'Revocation listener lost its connection' }),
      expect.objectContaining({ level: 20, context: 'RouterExplorer', msg: 'Mapped {/v1/models, GET} route' }),
    ]);
  });

  it("logs Nest's start-up narration at debug, so that LOG_LEVEL=info hides it, but not the framework's warnings", () => {
    const { lines } = setup('info');
    for (const context of ['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']) {
      new Logger(context).log(`${context} says hello`);
    }
    new Logger('NestApplication').warn('something odd');
    new Logger('AdminService').log('kept');

    expect(lines.map((l) => [l.level, l.context, l.msg])).toEqual([
      [40, 'NestApplication', 'something odd'],
      [30, 'AdminService', 'kept'],
    ]);
  });

  it('logs at debug the errors Nest also throws to main.ts (a port listen cannot take, a module that fails), keeping every other error', () => {
    const { lines } = setup('info');
    new Logger('NestApplication').error('Error: listen EADDRINUSE: address already in use :::8080');
    new Logger('ExceptionHandler').error(new Error('Nest can\'t resolve dependencies'));
    new Logger('ExceptionsHandler').error('a request failed');

    expect(lines.map((l) => [l.level, l.context, l.msg])).toEqual([[50, 'ExceptionsHandler', 'a request failed']]);
  });

  it("keeps the stack of Nest's error(message, stack, context) and of an Error passed alone", () => {
    const { lines } = setup();
    const thrown = new Error('database down');
    new Logger('ExceptionsHandler').error(thrown.message, thrown.stack);
    new Logger('BurstLimit').error('Redis unavailable');
    Logger.error('no context', thrown.stack);
    new Logger('Injector').error(thrown);

    expect(lines[0]).toMatchObject({ level: 50, context: 'ExceptionsHandler', msg: 'database down', err: { stack: thrown.stack } });
    expect(lines[1]).toEqual(expect.objectContaining({ context: 'BurstLimit', msg: 'Redis unavailable' }));
    expect(lines[1].err).toBeUndefined();
    expect(lines[2]).toMatchObject({ msg: 'no context', err: { stack: thrown.stack } });
    expect(lines[2].context).toBeUndefined();
    expect(lines[3]).toMatchObject({ context: 'Injector', msg: 'database down', err: { message: 'database down', stack: thrown.stack } });
  });

  it('maps debug to debug and verbose to trace, and drops what LOG_LEVEL filters out', () => {
    const all = setup('trace');
    new Logger('Ctx').debug('d');
    new Logger('Ctx').verbose('v');
    expect(all.lines.map((l) => [l.level, l.msg])).toEqual([
      [20, 'd'],
      [10, 'v'],
    ]);

    const quiet = setup('warn');
    new Logger('Ctx').log('dropped');
    new Logger('Ctx').warn({ requestId: 'req_2' }, 'kept');
    expect(quiet.lines).toEqual([expect.objectContaining({ level: 40, requestId: 'req_2', msg: 'kept' })]);
  });
});
