import fc from 'fast-check';

/**
 * Generated JSON, kept as text: a body is written by hand so that it can hold what JSON.stringify cannot
 * (number literals beyond 2^53 or beyond a double, duplicate keys, nesting deeper than a recursive
 * serializer survives). `hostile` names what is wrong with it, for the failure report; empty when valid.
 */
export interface Piece {
  text: string;
  hostile: readonly string[];
}

export const valid = (value: unknown): Piece => ({ text: JSON.stringify(value), hostile: [] });
const bad = (text: string, name: string): Piece => ({ text, hostile: [name] });
const badValue = (value: unknown, name: string): Piece => bad(JSON.stringify(value), name);

/** The value of `field`, or undefined to leave the field out. */
export type FieldArbitrary = fc.Arbitrary<Piece | undefined>;

/** An object from its fields, in order; `extra` entries (possibly repeating a field: a duplicate key) come after them. */
export function objectPiece(fields: [string, Piece | undefined][], extra: [string, Piece][] = []): Piece {
  const entries = [...fields, ...extra].filter((e): e is [string, Piece] => e[1] !== undefined);
  return {
    text: `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v.text}`).join(',')}}`,
    hostile: entries.flatMap(([k, v]) => v.hostile.map((h) => `${k}: ${h}`)),
  };
}

/** An arbitrary of objects with the given fields, each drawn from its own arbitrary (undefined: left out). */
export function objectOf(fields: Record<string, FieldArbitrary>, extra: fc.Arbitrary<[string, Piece][]> = fc.constant([])): fc.Arbitrary<Piece> {
  const names = Object.keys(fields);
  return fc
    .tuple(fc.tuple(...names.map((n) => fields[n])), extra)
    .map(([values, more]) => objectPiece(names.map((n, i) => [n, values[i]]), more));
}

/**
 * Mostly the valid values (so that requests get deep into the gateway), sometimes a hostile one: one in
 * `validWeight + 1`, lower for bodies with many fields so that enough of them pass validation.
 */
export function field(validValues: fc.Arbitrary<Piece | undefined>, hostile: fc.Arbitrary<Piece> = hostileValue(), validWeight = 4): FieldArbitrary {
  return fc.oneof({ weight: validWeight, arbitrary: validValues }, { weight: 1, arbitrary: hostile });
}

export const absent = fc.constant(undefined);

// Sizes: large enough to show super-linear work (a 1 s budget), small enough for the run to stay short.
const DEPTHS = [64, 1_000, 5_000, 20_000];
const KEY_COUNTS = [1_000, 20_000, 99_000, 120_000];

export const deepArray = (depth: number): Piece => bad(`${'['.repeat(depth)}${']'.repeat(depth)}`, `${depth}-deep nested arrays`);
export const deepObject = (depth: number): Piece => bad(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`, `${depth}-deep nested objects`);
export const manyKeys = (count: number): Piece =>
  bad(`{${Array.from({ length: count }, (_, i) => `"k${i}":0`).join(',')}}`, `object with ${count} keys`);

/** Numbers a column or a JavaScript number cannot hold, fractions, signs; raw text where JSON.stringify would change them. */
export function hostileNumber(): fc.Arbitrary<Piece> {
  return fc.oneof(
    fc.constantFrom(
      bad('9223372036854775808', '2^63 (beyond bigint)'),
      bad('-9223372036854775809', '-2^63-1'),
      bad('9007199254740993', '2^53+1 (not a double)'),
      bad('2147483648', '2^31 (beyond integer)'),
      bad('4294967296', '2^32'),
      bad(`1${'0'.repeat(400)}`, '401-digit integer'),
      bad('1e400', '1e400 (Infinity once parsed)'),
      bad('-1e400', '-1e400'),
      bad('1e308', '1e308'),
      bad('1e-400', '1e-400 (0 once parsed)'),
      bad('0.5', 'fraction 0.5'),
      bad('1.0000000000000002', 'fraction just above 1'),
      bad('-0', '-0'),
      bad('0', '0'),
      bad('-1', '-1'),
      bad('123456789012345678901234567890.123456789', 'huge decimal'),
    ),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => badValue(d, `double ${d}`)),
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 }).map((i) => badValue(i, `integer ${i}`)),
  );
}

const NUL = '\u0000';
/** Strings PostgreSQL, a log line or a validator may choke on. */
export function hostileString(): fc.Arbitrary<Piece> {
  return fc.oneof(
    fc.constantFrom(
      badValue('', 'empty string'),
      badValue(' ', 'blank string'),
      badValue(`a${NUL}b`, 'string with NUL'),
      badValue(NUL, 'NUL alone'),
      badValue('\ud800', 'lone high surrogate'),
      badValue('x\udc00y', 'lone low surrogate'),
      badValue('\ud83d', 'half an emoji'),
      badValue('\u202e\u0007\r\n\t', 'control characters'),
      badValue('__proto__', 'string "__proto__"'),
      badValue('constructor', 'string "constructor"'),
      badValue('1', 'numeric string'),
      badValue('1e3', 'numeric string 1e3'),
      badValue('NaN', 'string NaN'),
      badValue('Infinity', 'string Infinity'),
      badValue('0x10', 'hex string'),
      badValue('x'.repeat(100_000), '100,000-character string'),
      badValue('ü'.repeat(5_000), '5,000 two-byte characters'),
      badValue('😀'.repeat(3_000), '3,000 emoji'),
      badValue(`${'ab'.repeat(50)}${NUL}`.repeat(100), 'long string with NULs'),
    ),
    fc.string({ unit: 'binary', maxLength: 40 }).map((s) => badValue(s, 'random unicode string')),
  );
}

/** Objects and arrays where a scalar is expected, prototype-named keys, duplicates, nesting, size. */
export function hostileStructure(): fc.Arbitrary<Piece> {
  return fc.oneof(
    fc.constantFrom(
      bad('{}', 'empty object'),
      bad('[]', 'empty array'),
      bad('[1]', 'array [1]'),
      bad('[null]', 'array [null]'),
      bad('{"constructor":1}', '{"constructor":1}'),
      bad('{"constructor":{"prototype":{"x":1}}}', 'constructor.prototype object'),
      bad('{"__proto__":1}', '{"__proto__":1}'),
      bad('{"__proto__":{"polluted":true}}', '{"__proto__":{...}}'),
      bad('{"prototype":{}}', '{"prototype":{}}'),
      bad('{"toString":1,"valueOf":2,"hasOwnProperty":3}', 'Object.prototype method names as keys'),
      bad('{"a":1,"a":2}', 'duplicate keys'),
      bad('[[[[1]]]]', 'small nested array'),
    ),
    fc.constantFrom(...DEPTHS).map(deepArray),
    fc.constantFrom(...DEPTHS).map(deepObject),
    fc.constantFrom(...KEY_COUNTS).map(manyKeys),
  );
}

export function hostileValue(): fc.Arbitrary<Piece> {
  return fc.oneof(
    fc.constantFrom(bad('null', 'null'), bad('true', 'true'), bad('false', 'false')),
    hostileNumber(),
    hostileString(),
    hostileStructure(),
  );
}

/** Whole bodies that are not the object a route expects. */
export function hostileBody(): fc.Arbitrary<Piece> {
  return fc.oneof(
    fc.constantFrom(
      bad('null', 'body null'),
      bad('[]', 'body []'),
      bad('[{}]', 'body [{}]'),
      bad('"text"', 'body a string'),
      bad('42', 'body a number'),
      bad('9223372036854775808', 'body a huge number'),
      bad('true', 'body true'),
      bad('', 'empty body'),
      bad('   ', 'blank body'),
      bad('{', 'truncated JSON'),
      bad('{"a":', 'truncated JSON after a key'),
      bad('nul', 'not JSON'),
      bad('\ufeff{}', 'BOM then {}'),
      bad('{"__proto__":{"admin":true}}', 'body {"__proto__":{...}}'),
      bad('{"constructor":{"prototype":{"admin":true}}}', 'body {"constructor":{"prototype":...}}'),
      bad(`{"a":"${NUL}"}`.replace(NUL, '\\u0000'), 'body with a NUL string'),
    ),
    fc.constantFrom(...DEPTHS).map((d) => ({ ...deepArray(d), hostile: [`body: ${d}-deep nested arrays`] })),
    fc.constantFrom(...DEPTHS).map((d) => ({ ...deepObject(d), hostile: [`body: ${d}-deep nested objects`] })),
    fc.constantFrom(...KEY_COUNTS).map((n) => ({ ...manyKeys(n), hostile: [`body: object with ${n} keys`] })),
  );
}

/** Extra top-level entries some bodies get: prototype names, an unknown field, a duplicate of a real field. */
export function extraEntries(duplicable: string[]): fc.Arbitrary<[string, Piece][]> {
  const entry: fc.Arbitrary<[string, Piece]> = fc.oneof(
    fc.tuple(fc.constantFrom('__proto__', 'constructor', 'prototype'), fc.oneof(hostileStructure(), fc.constant(bad('1', '1')))).map(
      ([k, v]): [string, Piece] => [k, { text: v.text, hostile: [`prototype-named key ${k}=${v.hostile.join('') || v.text}`] }],
    ),
    fc.constant<[string, Piece]>(['unknown_field', bad('1', 'unknown field')]),
    fc.tuple(fc.constantFrom(...duplicable), hostileValue()).map(([k, v]): [string, Piece] => [k, { text: v.text, hostile: [`duplicate key, last wins: ${v.hostile.join('')}`] }]),
  );
  return fc.oneof({ weight: 6, arbitrary: fc.constant<[string, Piece][]>([]) }, { weight: 1, arbitrary: fc.array(entry, { minLength: 1, maxLength: 2 }) });
}

export const int = (min: number, max: number) => fc.integer({ min, max }).map(valid);
export const optional = (arb: fc.Arbitrary<Piece>) => fc.oneof(absent, arb);
export const oneOfValues = (...values: unknown[]) => fc.constantFrom(...values).map(valid);

/** Message text (chat messages, Responses input): short mostly; long single "words" and odd characters (token counting, logs, PostgreSQL). */
export const messageText = fc.oneof(
  { weight: 12, arbitrary: fc.string({ maxLength: 40 }).map(valid) },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.constantFrom(
        { text: JSON.stringify('a'.repeat(20_000)), hostile: ['content: one 20,000-letter word'] },
        { text: JSON.stringify('😀'.repeat(5_000)), hostile: ['content: 5,000 emoji in a row'] },
        { text: JSON.stringify('word '.repeat(4_000)), hostile: ['content: 4,000 words'] },
      ),
      fc.nat().map((seed) => ({ text: JSON.stringify(randomLetters(seed, 20_000)), hostile: [`content: 20,000 random letters (seed ${seed})`] })),
    ),
  },
  { weight: 1, arbitrary: hostileString() },
);

export function arrayOf(items: Piece[]): Piece {
  return { text: `[${items.map((i) => i.text).join(',')}]`, hostile: items.flatMap((item, n) => item.hostile.map((h) => `[${n}] ${h}`)) };
}

/** Letters from a small deterministic generator (a string of 20,000 fast-check characters would be slow to shrink and print). */
function randomLetters(seed: number, length: number): string {
  let state = seed >>> 0 || 1;
  let text = '';
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    text += String.fromCharCode(97 + (state >>> 24) % 26);
  }
  return text;
}
