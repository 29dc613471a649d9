import { canonicalJson } from './canonical-json';

/** The value of a JSON text, written canonically. */
const canonical = (text: string) => canonicalJson(JSON.parse(text));

describe(canonicalJson.name, () => {
  it('writes the same string for the same value whatever its keys order and spacing, at every level', () => {
    const a = '{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"temperature":0.5}';
    const b = `{
      "temperature": 0.5,
      "messages": [ { "content": [ { "text": "hi", "type": "text" } ], "role": "user" } ],
      "model": "m"
    }`;
    expect(canonical(b)).toBe(canonical(a));
    expect(canonical(a)).toBe('{"messages":[{"content":[{"text":"hi","type":"text"}],"role":"user"}],"model":"m","temperature":0.5}');
  });

  it('keeps arrays in their order', () => {
    expect(canonical('[1,2]')).not.toBe(canonical('[2,1]'));
    expect(canonical('{"a":[{"x":1},{"y":2}]}')).not.toBe(canonical('{"a":[{"y":2},{"x":1}]}'));
  });

  it('compares numbers and strings as parsed: 1.0, 1 and 1e0 are one number, "\\u0041" and "A" one string', () => {
    expect(canonical('{"n":1.0}')).toBe(canonical('{"n":1}'));
    expect(canonical('{"n":1e0}')).toBe(canonical('{"n":1}'));
    expect(canonical('{"n":-0.50}')).toBe(canonical('{"n":-0.5}'));
    expect(canonical('"\\u0041"')).toBe(canonical('"A"'));
    expect(canonical('{"n":1}')).not.toBe(canonical('{"n":"1"}'));
    expect(canonical('{"n":1}')).not.toBe(canonical('{"n":1.5}'));
  });

  it('tells values apart that differ anywhere: a value, a key, a key more', () => {
    const base = canonical('{"a":{"b":[true,null,"x"]}}');
    for (const other of ['{"a":{"b":[true,null,"y"]}}', '{"a":{"c":[true,null,"x"]}}', '{"a":{"b":[true,null,"x"],"c":1}}', '{"a":{"b":[true,false,"x"]}}']) {
      expect(canonical(other)).not.toBe(base);
    }
  });

  it('writes one order for keys that are array indices, and keeps a "__proto__" key as a key', () => {
    expect(canonical('{"10":1,"2":2,"b":3}')).toBe(canonical('{"b":3,"2":2,"10":1}'));
    expect(canonical('{"__proto__":{"x":1},"a":2}')).toBe('{"__proto__":{"x":1},"a":2}');
    expect(canonical('{"__proto__":{"x":1}}')).not.toBe(canonical('{}'));
  });

  it('writes scalars and empty containers as JSON does', () => {
    for (const text of ['null', 'true', '"s"', '0', '[]', '{}', '[[],{}]']) expect(canonical(text)).toBe(text);
  });

  it('writes a body nested as deep as limits.json_body_max_depth allows (1000)', () => {
    const text = '{"a":['.repeat(500) + '1' + ']}'.repeat(500);
    expect(canonical(text)).toBe(text);
  });
});
