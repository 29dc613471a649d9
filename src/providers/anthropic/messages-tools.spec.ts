import type { CatalogEntry } from '../../config/gateway-config.schema';
import { chatTools, passThroughToolChoice, passThroughTools } from './messages-tools';
import type { TypedTool } from './messages-wire';

const SEARCH = { type: 'web_search_20250305', name: 'web_search', max_uses: 8 };
const FETCH = { type: 'web_fetch_20250910', name: 'web_fetch' };
const CODE = { type: 'code_execution_20250825', name: 'code_execution' };
const BASH = { type: 'bash_20250124', name: 'bash' };
const CUSTOM = { name: 'get_weather', input_schema: { type: 'object' } };
const priced = (tool_fees?: Record<string, number>) => ({ id: 'claude', tool_fees, tool_hold_uses: 10 }) as unknown as CatalogEntry;

describe(passThroughTools.name, () => {
  it('serves a server tool whose uses Anthropic counts and whose fee the model prices, with its max_uses for the hold', () => {
    const sut = passThroughTools([CUSTOM, SEARCH, FETCH, BASH], priced({ web_search: 0.01, web_fetch: 0 }));
    expect(sut.tools).toEqual([CUSTOM, SEARCH, FETCH, BASH]);
    expect(sut.withdrawn).toEqual([]);
    expect(sut.serverTools).toEqual({ web_search: 8, web_fetch: null });
    // Forcing a served tool is fine: Claude Code's WebSearch forces web_search.
    expect(() => passThroughToolChoice({ type: 'tool', name: 'web_search' }, sut)).not.toThrow();
  });

  it('withdraws an unpriced server tool as before, and one whose use no answer counts even when priced', () => {
    const sut = passThroughTools([SEARCH, FETCH, CODE, CUSTOM], priced({ web_search: 0.01, code_execution: 0.05 }));
    expect(sut.tools).toEqual([SEARCH, CUSTOM]);
    expect(sut.withdrawn).toEqual([
      { name: 'tools:web_fetch_20250910', label: 'tools:web_fetch' },
      { name: 'tools:code_execution_20250825', label: 'tools:code_execution' },
    ]);
    expect(sut.serverTools).toEqual({ web_search: 8 });
    expect(() => passThroughToolChoice({ type: 'tool', name: 'web_fetch' }, sut)).toThrow(expect.objectContaining({ param: 'tool_choice' }));
  });

  it('serves none without a model (a model not served by anthropic upstreams alone), nor when the model prices none', () => {
    for (const sut of [passThroughTools([SEARCH, CUSTOM]), passThroughTools([SEARCH, CUSTOM], priced())]) {
      expect(sut.tools).toEqual([CUSTOM]);
      expect(sut.withdrawn).toEqual([{ name: 'tools:web_search_20250305', label: 'tools:web_search' }]);
      expect(sut.serverTools).toBeUndefined();
    }
  });

  it('refuses a max_uses the hold cannot read, and adds two of one family (none set: none)', () => {
    const model = priced({ web_search: 0.01 });
    for (const max_uses of [0, -1, 1.5, '3', true]) {
      expect(() => passThroughTools([{ ...SEARCH, max_uses } as TypedTool], model)).toThrow(expect.objectContaining({ param: 'tools[0].max_uses' }));
    }
    expect(passThroughTools([{ ...SEARCH, max_uses: null }], model).serverTools).toEqual({ web_search: null });
    const twice = [SEARCH, { type: 'web_search_20260209', name: 'web_search_2', max_uses: 2 }];
    expect(passThroughTools(twice, model).serverTools).toEqual({ web_search: 10 });
    expect(passThroughTools([...twice, { type: 'web_search_20260318', name: 'web_search_3' }], model).serverTools).toEqual({ web_search: null });
  });
});

describe(chatTools.name, () => {
  it('withdraws server tools on a translated upstream whatever their price: no chat upstream runs them', () => {
    const sut = chatTools([SEARCH, CUSTOM]);
    expect(sut.tools).toEqual([{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }]);
    expect(sut.withdrawn).toEqual([{ name: 'tools:web_search_20250305', label: 'tools:web_search' }]);
    expect(sut.serverTools).toBeUndefined();
  });
});
