import { checkJsonShape } from './json-shape';

const measure = (text: string, maxDepth = 64, maxKeys = 100_000) => checkJsonShape(Buffer.from(text), { maxDepth, maxKeys });

/** Keys and array elements of a parsed value, counted the slow, obvious way. */
function keysOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return children.length + children.reduce((sum: number, child) => sum + keysOf(child), 0);
}

describe('checkJsonShape', () => {
  it.each([
    ['an empty object', {}],
    ['scalars', 'text'],
    ['empty containers inside others', [[], {}, [[]], { a: {} }]],
    ['strings holding brackets, commas, quotes and backslashes', { 'k,[{"\\': 'v]},"\\\\"', list: ['\\', '"', ',,,'] }],
    ['a chat request', { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi, [there]' }] }], n: 1 }],
  ])('counts exactly the keys and elements of %s, pretty-printed or not', (_, value) => {
    for (const text of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
      const keys = keysOf(value);
      expect(measure(text, 64, keys)).toBeNull();
      if (keys > 0) expect(measure(text, 64, keys - 1)).toBe('keys');
    }
  });

  it('measures depth with the body itself at depth 1', () => {
    expect(measure('1')).toBeNull();
    expect(measure('{"a":[1]}', 2)).toBeNull();
    expect(measure('{"a":[1]}', 1)).toBe('depth');
    expect(measure('['.repeat(64) + ']'.repeat(64))).toBeNull();
    expect(measure('['.repeat(65) + ']'.repeat(65))).toBe('depth');
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    expect(measure(`{"s":"\\"${'['.repeat(100)}"}`, 2)).toBeNull();
    expect(measure(`{"s":"\\\\"${',1'.repeat(10)}}`, 64, 10)).toBe('keys');
  });

  it('stops at the first bound crossed, whatever follows (an unterminated or invalid text included)', () => {
    expect(measure('['.repeat(1_000_000))).toBe('depth');
    expect(measure(`[${'0,'.repeat(200_000)}`)).toBe('keys');
    expect(measure('{"open string')).toBeNull();
  });
});
