import { resolveLogFormat } from './log-output';

describe('resolveLogFormat', () => {
  it('follows LOG_FORMAT when it is set, wherever stdout goes', () => {
    expect(resolveLogFormat('json', { isTTY: true })).toBe('json');
    expect(resolveLogFormat('pretty', { isTTY: undefined })).toBe('pretty');
  });

  it('unset: readable lines on a terminal, JSON lines into a pipe or a file (a container, a log collector)', () => {
    expect(resolveLogFormat(undefined, { isTTY: true })).toBe('pretty');
    expect(resolveLogFormat(undefined, { isTTY: undefined })).toBe('json');
  });
});
