import { UnknownKeys } from './unknown-keys';

describe(UnknownKeys.name, () => {
  let clock: number;
  let sut: UnknownKeys;

  beforeEach(() => {
    clock = 0;
    sut = new UnknownKeys(1_000, 3, () => clock);
  });

  it('remembers a hash until its TTL ends', () => {
    sut.add('a');
    clock = 999;
    expect(sut.has('a')).toBe(true);
    clock = 1_000;
    expect(sut.has('a')).toBe(false);
    expect(sut.size).toBe(0);
  });

  it('forgets a deleted hash at once', () => {
    sut.add('a');
    sut.delete('a');
    expect(sut.has('a')).toBe(false);
  });

  it('holds at most maxEntries, dropping the oldest first', () => {
    for (const hash of ['a', 'b', 'c', 'd', 'e']) sut.add(hash);
    expect(sut.size).toBe(3);
    expect(['a', 'b', 'c', 'd', 'e'].map((hash) => sut.has(hash))).toEqual([false, false, true, true, true]);
  });

  it('drops expired entries before live ones', () => {
    sut.add('a');
    clock = 500;
    sut.add('b');
    sut.add('c');
    clock = 1_000;
    sut.add('d');
    expect(['a', 'b', 'c', 'd'].map((hash) => sut.has(hash))).toEqual([false, true, true, true]);
  });

  it('renews a hash added again, which then goes last', () => {
    sut.add('a');
    clock = 100;
    sut.add('b');
    sut.add('c');
    clock = 200;
    sut.add('a');
    sut.add('d');
    expect(['a', 'b', 'c', 'd'].map((hash) => sut.has(hash))).toEqual([true, false, true, true]);
    clock = 1_150;
    expect(sut.has('a')).toBe(true);
  });
});
