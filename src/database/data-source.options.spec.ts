import { Logger } from '@nestjs/common';
import { gatewayDataSourceOptions } from './data-source.options';

describe('the pool error handler of the app DataSource', () => {
  const warnings: string[] = [];
  const debugs: string[] = [];
  beforeEach(() => {
    warnings.length = 0;
    debugs.length = 0;
    Logger.overrideLogger({ log: () => undefined, error: () => undefined, warn: (m: string) => warnings.push(m), debug: (m: string) => debugs.push(m) });
  });
  afterEach(() => Logger.overrideLogger(false));

  const terminated = new Error('terminating connection due to administrator command');

  it('warns of an idle connection dropped while the pool is in use (a server restart)', () => {
    gatewayDataSourceOptions('postgres://h/db', 4, () => true).poolErrorHandler!(terminated);
    expect(warnings).toEqual(['An idle database connection failed and was dropped: terminating connection due to administrator command']);
  });

  it('keeps quiet (debug) once the pool is closed: a stop or a failed start, the embedded server stopped next', () => {
    gatewayDataSourceOptions('postgres://h/db', 4, () => false).poolErrorHandler!(terminated);
    expect(warnings).toEqual([]);
    expect(debugs).toEqual(['An idle database connection failed and was dropped: terminating connection due to administrator command (the pool was closed)']);
  });
});
