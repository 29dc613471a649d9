import { compileBody } from './compiled-body';

describe(compileBody.name, () => {
  const sut = compileBody({
    type: 'object',
    properties: {
      count: { type: 'integer', minimum: 1, maximum: 10, nullable: true },
      ratio: { type: 'number', minimum: 0, maximum: 2 },
      format: { type: 'string', enum: ['mp3', 'wav', null], nullable: true },
      name: { type: 'string', minLength: 1 },
      options: { type: 'object', properties: { flag: { type: 'boolean' } } },
      items: { type: 'array', minItems: 1, items: { type: 'object', properties: { role: { type: 'string' } }, required: ['role'] } },
    },
    required: ['name'],
  });

  it('passes a body that holds to the schema, null standing for an absent nullable field', () => {
    expect(sut({ name: 'a', count: null, format: null, extra: { deep: [1] } })).toBeNull();
  });

  it("names the field at fault in param's notation, in class-validator's words", () => {
    expect(sut({ name: 'a', count: 'ten' })).toEqual({ path: 'count', message: 'count must be an integer number', keyword: 'type' });
    expect(sut({ name: 'a', count: 0 })).toMatchObject({ path: 'count', message: 'count must not be less than 1' });
    expect(sut({ name: 'a', ratio: 2.5 })).toMatchObject({ path: 'ratio', message: 'ratio must not be greater than 2' });
    expect(sut({ name: 'a', ratio: JSON.parse('1e400') })).toMatchObject({ path: 'ratio', message: 'ratio must be a number conforming to the specified constraints' });
    expect(sut({ name: 'a', format: 3 })).toMatchObject({ path: 'format', message: 'format must be one of the following values: mp3, wav' });
    expect(sut({ name: '' })).toMatchObject({ path: 'name', message: 'name should not be empty' });
    expect(sut({ name: 'a', options: { flag: 'yes' } })).toMatchObject({ path: 'options.flag', message: 'flag must be a boolean value' });
    expect(sut({ name: 'a', items: [{ role: 'x' }, { role: 1 }] })).toMatchObject({ path: 'items[1].role' });
    expect(sut({ name: 'a', items: [{ role: 'x' }, {}] })).toMatchObject({ path: 'items[1].role', keyword: 'required' });
    expect(sut({})).toMatchObject({ path: 'name', keyword: 'required' });
  });

  it('reports the first field at fault in the order of the schema, whatever the order of the body', () => {
    expect(sut({ name: 'a', options: [], count: 'x', ratio: -1 })).toMatchObject({ path: 'count' });
    expect(sut({ name: 'a', options: [], ratio: -1 })).toMatchObject({ path: 'ratio' });
  });

  it('reads only own fields: prototype names in a body are fields like any other', () => {
    expect(sut(JSON.parse('{"name": "a", "__proto__": {"count": "x"}, "constructor": 1}'))).toBeNull();
  });
});
