import { isModelPattern, ModelPattern, patternProblem } from './model-pattern';

describe(ModelPattern.name, () => {
  it.each<[string, string, boolean]>([
    ['claude-*', 'claude-opus-5-5', true],
    ['claude-*', 'claude-', true],
    ['claude-*', 'my-claude-x', false],
    ['claude-*', 'Claude-opus', false],
    ['gpt-*-sol', 'gpt-6.2-sol', true],
    ['gpt-*-sol', 'gpt-sol', false],
    ['gpt-*-sol', 'gpt--sol', true],
    ['gpt-*-sol', 'gpt-6.2-sol-mini', false],
    ['*-mini', 'gpt-4o-mini', true],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'aXbYbZc', true],
    ['a*b*c', 'acb', false],
    ['ab*ba', 'aba', false],
    ['ab*ba', 'abba', true],
    ['*', '', true],
    ['*', 'anything at all', true],
    ['org/*:*', 'org/echo:1', true],
    ['org/*:*', 'org/echo', false],
  ])('%s against %s: %s', (pattern, name, expected) => {
    const sut = new ModelPattern(pattern);
    expect(sut.matches(name)).toBe(expected);
  });

  it('stays linear on a long name that almost matches (no backtracking)', () => {
    const sut = new ModelPattern('a*a*a*a*a*b');
    const name = 'a'.repeat(1_000_000);
    const started = process.hrtime.bigint();
    expect(sut.matches(name)).toBe(false);
    expect(sut.matches(`${name}b`)).toBe(true);
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(200);
  });

  it('is written as a LIKE pattern with %, _ and \\ taken literally', () => {
    expect(new ModelPattern('gpt-*-sol').sqlLike()).toBe('gpt-%-sol');
    expect(new ModelPattern('my_model%*').sqlLike()).toBe('my\\_model\\%%');
  });

  it('tells patterns from exact names, and refuses **', () => {
    expect([isModelPattern('claude-*'), isModelPattern('tts-1')]).toEqual([true, false]);
    expect(patternProblem('claude-**')).toContain('**');
    expect(patternProblem('claude-*')).toBeUndefined();
    expect(patternProblem('tts-1')).toBeUndefined();
  });
});
