import { performance } from 'node:perf_hooks';
import type { ChatContentPart, ChatRequestBody, ChatTool } from '../chat-contract';
import { argumentPieces } from './dev-echo-answer';
import { minimalArguments, plannedCalls, scriptedCalls } from './dev-echo-tools';

const fn = (name: string, parameters?: Record<string, unknown>): ChatTool => ({ type: 'function', function: { name, ...(parameters === undefined ? {} : { parameters }) } });
const TOOLS = [fn('get_weather', { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }), fn('get_time')];
const offered = new Map<string, unknown>([
  ['get_weather', undefined],
  ['get_time', undefined],
]);

describe('scriptedCalls', () => {
  it('reads each `call NAME {json-object}` line in order, arguments re-serialized', async () => {
    const text = 'Please:\ncall get_weather {"city": "Paris"}\n  call get_time   {}  \r\ncall get_weather {"city":"Köln 🦊"}';
    expect(await scriptedCalls(text, offered)).toEqual([
      { name: 'get_weather', arguments: '{"city":"Paris"}' },
      { name: 'get_time', arguments: '{}' },
      { name: 'get_weather', arguments: '{"city":"Köln 🦊"}' },
    ]);
  });

  it.each([
    ['a tool not offered', 'call get_stock {"ticker": "X"}'],
    ['JSON that is not an object', 'call get_time []'],
    ['JSON that does not parse', 'call get_time {"zone": }'],
    ['text after the object', 'call get_time {} and more'],
    ['no arguments', 'call get_time'],
    ['no space after the name', 'call get_time{}'],
    ['the keyword inside a word', 'recall get_time {}'],
    ['another keyword', 'Call get_time {}'],
    ['the line not starting with it', 'now call get_time {}'],
  ])('takes no call from %s', async (_, line) => {
    expect(await scriptedCalls(line, offered)).toEqual([]);
  });

  it("reads every text part of a content array, a part's end ending its line", async () => {
    const content: ChatContentPart[] = [
      { type: 'text', text: '<context>cwd: /tmp</context>' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      { type: 'text', text: 'call get_time {"zone": "UTC"}' },
    ];
    expect(await scriptedCalls(content, offered)).toEqual([{ name: 'get_time', arguments: '{"zone":"UTC"}' }]);
  });

  it('takes time linear in the text: 10× the lines cost at most ~15× the time', async () => {
    const lines = (n: number) => 'call get_time {"a": [1, 2, 3]}\ncall nope {"x": 1}\ncall get_time {"broken"}\n\n  \ncall get_time {\n'.repeat(n);
    const timed = async (text: string) => {
      const start = performance.now();
      await scriptedCalls(text, offered);
      return performance.now() - start;
    };
    await timed(lines(2000));
    const best = async (text: string) => Math.min(await timed(text), await timed(text), await timed(text));
    const small = await best(lines(5000));
    const large = await best(lines(50_000));
    expect(large).toBeLessThan(Math.max(small, 1) * 15);
  });

  it('gives the event loop back while it reads a long message of broken call lines', async () => {
    const text = 'call get_time {]}\n'.repeat(100_000);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const start = performance.now();
    await scriptedCalls(text, offered);
    const elapsed = performance.now() - start;
    clearInterval(timer);
    // Every 10 ms slice ends with a setImmediate, so the 1 ms timer fires between slices.
    expect(ticks).toBeGreaterThanOrEqual(Math.floor(elapsed / 50));
    expect(elapsed).toBeGreaterThan(20);
  });
});

describe('minimalArguments', () => {
  it('fills only the required properties, each with the least value of its schema, recursively', () => {
    const schema = {
      type: 'object',
      properties: {
        path: { type: 'string' },
        limit: { type: 'integer' },
        ratio: { type: 'number' },
        recursive: { type: 'boolean' },
        globs: { type: 'array', items: { type: 'string' } },
        mode: { type: 'string', enum: ['read', 'write'] },
        version: { const: 2 },
        anything: { description: 'no type' },
        options: {
          type: 'object',
          properties: { depth: { type: 'integer' }, follow: { type: 'boolean' }, inner: { type: 'object', properties: { x: { type: 'string' } } } },
          required: ['depth', 'inner'],
        },
        optional: { type: 'string' },
        nullable: { type: ['string', 'null'] },
      },
      required: ['path', 'limit', 'ratio', 'recursive', 'globs', 'mode', 'version', 'anything', 'options', 'undeclared', 'nullable'],
    };
    expect(minimalArguments(schema)).toEqual({
      path: '',
      limit: 0,
      ratio: 0,
      recursive: false,
      globs: [],
      mode: 'read',
      version: 2,
      anything: null,
      options: { depth: 0, inner: {} },
      undeclared: null,
      nullable: '',
    });
  });

  it('is {} without a schema or without required properties', () => {
    expect(minimalArguments(undefined)).toEqual({});
    expect(minimalArguments({ type: 'object', properties: { a: { type: 'string' } } })).toEqual({});
  });

  it('keeps property names that are Object.prototype names as plain properties', () => {
    // As a parsed body holds it: "__proto__" an own property of `properties`.
    const schema = JSON.parse('{"type": "object", "properties": {"__proto__": {"type": "string"}}, "required": ["__proto__", "constructor", "toString"]}');
    const args = minimalArguments(schema);
    expect(JSON.stringify(args)).toBe('{"__proto__":"","constructor":null,"toString":null}');
  });
});

describe('plannedCalls', () => {
  const user = (text: string): ChatRequestBody => ({ model: 'dev-echo', messages: [{ role: 'user', content: text }], tools: TOOLS });

  it('calls the scripted tools when the choice allows it', async () => {
    expect(await plannedCalls(user(''), 'call get_time {}')).toEqual([{ name: 'get_time', arguments: '{}' }]);
    expect(await plannedCalls({ ...user(''), tool_choice: 'auto' }, 'call get_time {}')).toEqual([{ name: 'get_time', arguments: '{}' }]);
  });

  it('never calls with tool_choice none, nor without tools', async () => {
    expect(await plannedCalls({ ...user(''), tool_choice: 'none' }, 'call get_time {}')).toEqual([]);
    expect(await plannedCalls({ model: 'dev-echo', messages: [], tool_choice: 'required' }, 'call get_time {}')).toEqual([]);
  });

  it('answers `required` without a script line with the first tool and its least arguments', async () => {
    expect(await plannedCalls({ ...user(''), tool_choice: 'required' }, 'hello')).toEqual([{ name: 'get_weather', arguments: '{"city":""}' }]);
  });

  it('answers a tool forced by name with that tool: its script lines only, else its least arguments', async () => {
    const forced: ChatRequestBody = { ...user(''), tool_choice: { type: 'function', function: { name: 'get_time' } } };
    expect(await plannedCalls(forced, 'call get_weather {"city": "Oslo"}')).toEqual([{ name: 'get_time', arguments: '{}' }]);
    expect(await plannedCalls(forced, 'call get_time {"zone": "CET"}')).toEqual([{ name: 'get_time', arguments: '{"zone":"CET"}' }]);
    expect(await plannedCalls({ ...forced, tool_choice: { type: 'function', function: { name: 'not_offered' } } }, 'hi')).toEqual([]);
  });

  it('only offers function tools with a name', async () => {
    // A function without a name, and null: outside the contract's types, as a client may send them.
    const tools = [{ type: 'custom', custom: { name: 'get_time' } }, { type: 'function', function: {} }, null] as unknown as ChatTool[];
    expect(await plannedCalls({ model: 'dev-echo', messages: [], tools, tool_choice: 'required' }, 'call get_time {}')).toEqual([]);
  });
});

describe('argumentPieces', () => {
  it('cuts arguments into at most three pieces that concatenate to them, never inside a surrogate pair', () => {
    for (const text of ['{}', '{"city":"Paris"}', '{"a":"🦊🦊🦊🦊🦊"}', '🦊', '']) {
      const pieces = argumentPieces(text);
      expect(pieces.join('')).toBe(text);
      expect(pieces.length).toBeLessThanOrEqual(3);
      for (const piece of pieces) expect(piece).toBe(Buffer.from(piece, 'utf8').toString('utf8'));
    }
    expect(argumentPieces('{"city":"Paris"}')).toHaveLength(3);
  });
});
