import fc from 'fast-check';
import type { CatalogEntry } from '../config/gateway-config.schema';
import { MAX_TOKEN_COUNT, requestCost, separatesCacheWrite1h, tokenUsageOf, worstCaseMicros } from './request-cost';
import { tokenPrices } from './token-prices';

/** gpt-4o-audio-preview's prices, and cache writes at 1.25 × input (5 minutes) and 2 × input (1 hour), Anthropic's ratios. */
const PRICED = {
  id: 'priced',
  kind: 'chat',
  input_price_per_million: 2.5,
  cached_input_price_per_million: 1.25,
  cache_write_price_per_million: 3.125,
  cache_write_1h_price_per_million: 5,
  audio_input_price_per_million: 40,
  output_price_per_million: 10,
  audio_output_price_per_million: 80,
} as CatalogEntry;

/** Only the two base prices: every class costs its total's price. */
const BASE_ONLY = { id: 'base-only', kind: 'chat', input_price_per_million: 2.5, output_price_per_million: 10 } as CatalogEntry;

const usage = (prompt: number, completion: number, promptDetails: Record<string, unknown> = {}, completionDetails: Record<string, unknown> = {}) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
  prompt_tokens_details: promptDetails,
  completion_tokens_details: completionDetails,
});

const micros = (block: unknown, model: CatalogEntry = PRICED) => requestCost(block, model)?.micros;

describe(requestCost.name, () => {
  it('charges plain tokens at the input and output prices', () => {
    // 1,000 × 2.5 + 100 × 10 = 3,500 micro-USD
    expect(requestCost({ prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100 }, PRICED)).toEqual({
      micros: 3500n,
      usage: { promptTokens: 1000, completionTokens: 100, cachedTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0, audioInputTokens: 0, audioOutputTokens: 0, reasoningTokens: 0 },
      variants: [],
      tools: [],
      unpriced: [],
    });
  });

  it.each([
    // [class, usage block, micro-USD, the class count recorded]
    ['cached', usage(1000, 100, { cached_tokens: 800 }), 200 * 2.5 + 800 * 1.25 + 100 * 10, { cachedTokens: 800 }],
    ['cache-write', usage(1000, 100, { cache_write_tokens: 800 }), 200 * 2.5 + 800 * 3.125 + 100 * 10, { cacheWriteTokens: 800, cacheWrite1hTokens: 0 }],
    [
      '1-hour cache-write (a part of the cache writes)',
      usage(1000, 100, { cache_write_tokens: 800, cache_write_1h_tokens: 400 }),
      200 * 2.5 + 400 * 3.125 + 400 * 5 + 100 * 10,
      { cacheWriteTokens: 800, cacheWrite1hTokens: 400 },
    ],
    ['audio input', usage(1000, 100, { audio_tokens: 800 }), 200 * 2.5 + 800 * 40 + 100 * 10, { audioInputTokens: 800 }],
    ['audio output', usage(1000, 100, {}, { audio_tokens: 60 }), 1000 * 2.5 + 40 * 10 + 60 * 80, { audioOutputTokens: 60 }],
    ['reasoning (billed as output)', usage(1000, 100, {}, { reasoning_tokens: 60 }), 1000 * 2.5 + 100 * 10, { reasoningTokens: 60 }],
  ])('charges %s tokens at their own price', (_, block, expected, counted) => {
    const cost = requestCost(block, PRICED)!;
    expect(cost.micros).toBe(BigInt(expected));
    expect(cost.usage).toMatchObject({ promptTokens: 1000, completionTokens: 100, ...counted });
  });

  it('charges every class together, each at its price', () => {
    const block = usage(10_000, 1_000, { cached_tokens: 4_000, cache_write_tokens: 2_000, audio_tokens: 1_000 }, { audio_tokens: 300, reasoning_tokens: 200 });
    // (10,000 − 4,000 − 2,000 − 1,000) × 2.5 + 4,000 × 1.25 + 2,000 × 3.125 + 1,000 × 40 + (1,000 − 300) × 10 + 300 × 80
    const expected = 3_000 * 2.5 + 4_000 * 1.25 + 2_000 * 3.125 + 1_000 * 40 + 700 * 10 + 300 * 80;
    expect(requestCost(block, PRICED)).toEqual({
      micros: BigInt(expected),
      usage: { promptTokens: 10_000, completionTokens: 1_000, cachedTokens: 4_000, cacheWriteTokens: 2_000, cacheWrite1hTokens: 0, audioInputTokens: 1_000, audioOutputTokens: 300, reasoningTokens: 200 },
      variants: [],
      tools: [],
      unpriced: [],
    });
  });

  it('charges a class without a price of its own at its total price', () => {
    const block = usage(10_000, 1_000, { cached_tokens: 4_000, cache_write_tokens: 2_000, audio_tokens: 1_000 }, { audio_tokens: 300, reasoning_tokens: 200 });
    expect(micros(block, BASE_ONLY)).toBe(BigInt(10_000 * 2.5 + 1_000 * 10));
    expect(requestCost(block, BASE_ONLY)!.usage.cachedTokens).toBe(4_000);
  });

  it('charges cached, 5-minute and 1-hour cache-write tokens each at its price', () => {
    // Anthropic's claude-sonnet-4-5 prices: 3 input, 0.30 cache read, 3.75 5-minute write, 6 1-hour write, 15 output.
    const sonnet = {
      id: 'sonnet', kind: 'chat', input_price_per_million: 3, cached_input_price_per_million: 0.3, cache_write_price_per_million: 3.75,
      cache_write_1h_price_per_million: 6, output_price_per_million: 15,
    } as CatalogEntry;
    const block = usage(10_000, 500, { cached_tokens: 6_000, cache_write_tokens: 3_000, cache_write_1h_tokens: 1_000 });
    // (10,000 − 6,000 − 3,000) × 3 + 6,000 × 0.3 + (3,000 − 1,000) × 3.75 + 1,000 × 6 + 500 × 15
    expect(micros(block, sonnet)).toBe(BigInt(1_000 * 3 + 1_800 + 2_000 * 3.75 + 1_000 * 6 + 500 * 15));
    expect(requestCost(block, sonnet)!.usage).toMatchObject({ cachedTokens: 6_000, cacheWriteTokens: 3_000, cacheWrite1hTokens: 1_000 });
  });

  it('prices 1-hour cache writes at the cache-write price when the entry sets no price of their own, else at the input price', () => {
    const block = usage(1000, 100, { cache_write_tokens: 800, cache_write_1h_tokens: 300 });
    const { cache_write_1h_price_per_million: _, ...withoutOwn } = PRICED;
    expect(tokenPrices(withoutOwn as CatalogEntry)).toMatchObject({ cacheWrite: 3_125_000n, cacheWrite1h: 3_125_000n });
    expect(micros(block, withoutOwn as CatalogEntry)).toBe(BigInt(200 * 2.5 + 800 * 3.125 + 100 * 10));
    expect(tokenPrices(BASE_ONLY)).toMatchObject({ cacheWrite: 2_500_000n, cacheWrite1h: 2_500_000n });
    expect(micros(block, BASE_ONLY)).toBe(BigInt(1000 * 2.5 + 100 * 10));
    // A 1-hour price alone: the 5-minute writes at the input price.
    const only1h = { ...BASE_ONLY, cache_write_1h_price_per_million: 5 } as CatalogEntry;
    expect(micros(block, only1h)).toBe(BigInt(700 * 2.5 + 300 * 5 + 100 * 10));
  });

  it('cuts 1-hour cache writes to the cache writes as cut, and counts invalid ones as 0', () => {
    const cut = (promptDetails: Record<string, unknown>, prompt = 1000) => requestCost(usage(prompt, 100, promptDetails), PRICED)!;
    // More 1-hour writes than writes: all the writes are 1-hour ones.
    expect(cut({ cache_write_tokens: 200, cache_write_1h_tokens: 500 }).usage).toMatchObject({ cacheWriteTokens: 200, cacheWrite1hTokens: 200 });
    expect(cut({ cache_write_tokens: 200, cache_write_1h_tokens: 500 }).micros).toBe(BigInt(800 * 2.5 + 200 * 5 + 100 * 10));
    // 1-hour writes without writes: none.
    expect(cut({ cache_write_1h_tokens: 500 }).usage).toMatchObject({ cacheWriteTokens: 0, cacheWrite1hTokens: 0 });
    expect(cut({ cache_write_1h_tokens: 500 }).micros).toBe(3500n);
    // The writes cut to the prompt (after 900 cached): 100 writes left, the 1-hour ones cut to them.
    expect(cut({ cached_tokens: 900, cache_write_tokens: 400, cache_write_1h_tokens: 300 }).usage).toMatchObject({
      cachedTokens: 900,
      cacheWriteTokens: 100,
      cacheWrite1hTokens: 100,
    });
    for (const value of [-5, 2.5, '300', null, Number.NaN, { tokens: 3 }]) {
      expect([value, cut({ cache_write_tokens: 400, cache_write_1h_tokens: value }).usage.cacheWrite1hTokens]).toEqual([value, 0]);
    }
  });

  it('cuts subtotals over their total to fit, in the order cached, cache-write, audio', () => {
    // 100 prompt tokens: cached 70 fits, cache-write 50 is cut to the 30 left, audio 40 to nothing.
    const over = requestCost(usage(100, 10, { cached_tokens: 70, cache_write_tokens: 50, audio_tokens: 40 }, { audio_tokens: 25, reasoning_tokens: 8 }), PRICED)!;
    expect(over.usage).toMatchObject({ promptTokens: 100, cachedTokens: 70, cacheWriteTokens: 30, audioInputTokens: 0, completionTokens: 10, audioOutputTokens: 10, reasoningTokens: 0 });
    expect(over.micros).toBe(BigInt(Math.ceil(70 * 1.25 + 30 * 3.125 + 10 * 80)));
    // One subtotal alone over its total: the whole total is of that class.
    expect(requestCost(usage(100, 10, { audio_tokens: 1_000 }), PRICED)!.usage).toMatchObject({ audioInputTokens: 100, cachedTokens: 0 });
    expect(micros(usage(100, 10, { audio_tokens: 1_000 }))).toBe(BigInt(100 * 40 + 10 * 10));
    // Reasoning gets what audio output left.
    expect(requestCost(usage(100, 10, {}, { audio_tokens: 4, reasoning_tokens: 9 }), PRICED)!.usage).toMatchObject({ audioOutputTokens: 4, reasoningTokens: 6 });
  });

  it.each<[string, unknown]>([
    ['missing', undefined],
    ['null', null],
    ['negative', -5],
    ['not a whole number', 2.5],
    ['a string', '800'],
    ['NaN', Number.NaN],
    ['infinite', Number.POSITIVE_INFINITY],
    ['an object', { tokens: 800 }],
    ['true', true],
  ])('counts a subtotal that is %s as 0', (_, value) => {
    const block = usage(1000, 100, { cached_tokens: value, cache_write_tokens: value, cache_write_1h_tokens: value, audio_tokens: value }, { audio_tokens: value, reasoning_tokens: value });
    const cost = requestCost(block, PRICED)!;
    expect(cost.usage).toEqual({ promptTokens: 1000, completionTokens: 100, cachedTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0, audioInputTokens: 0, audioOutputTokens: 0, reasoningTokens: 0 });
    expect(cost.micros).toBe(3500n);
  });

  it('reads details that are missing or not objects as no details', () => {
    for (const details of [undefined, null, 'cached', 42, []]) {
      const block = { prompt_tokens: 1000, completion_tokens: 100, prompt_tokens_details: details, completion_tokens_details: details };
      expect([details, micros(block)]).toEqual([details, 3500n]);
    }
  });

  it.each<[string, unknown]>([
    ['no usage', undefined],
    ['null', null],
    ['a string', 'usage'],
    ['no completion_tokens', { prompt_tokens: 10 }],
    ['a string total', { prompt_tokens: '10', completion_tokens: 5 }],
    ['a negative total', { prompt_tokens: -1, completion_tokens: 5 }],
    ['a fractional total', { prompt_tokens: 10, completion_tokens: 0.5 }],
    ['a total no usage record can hold', { prompt_tokens: MAX_TOKEN_COUNT + 1, completion_tokens: 5 }],
  ])('has no cost for a block with %s (the gateway counts the tokens itself)', (_, block) => {
    expect(requestCost(block, PRICED)).toBeNull();
  });

  it('rounds up to the micro-dollar once per request, not once per class', () => {
    const cents = { id: 'fractions', kind: 'chat', input_price_per_million: 0.3, cached_input_price_per_million: 0.3, audio_input_price_per_million: 0.3, output_price_per_million: 0.3 } as CatalogEntry;
    // 1 plain + 1 cached + 1 audio token at 0.3 micro-USD each = 0.9 → 1 (per class it would be 3).
    expect(micros(usage(3, 0, { cached_tokens: 1, audio_tokens: 1 }), cents)).toBe(1n);
    // 1 token at 0.3 → 1 (up, not to the nearest); 10 tokens at 0.3 = 3 exactly → 3.
    expect(micros(usage(1, 0), cents)).toBe(1n);
    expect(micros(usage(10, 0), cents)).toBe(3n);
    expect(micros(usage(0, 0), cents)).toBe(0n);
    // 997 × 1.25 + 123 × 10 = 2,476.25 → 2,477
    expect(micros(usage(997, 123), { id: 'x', kind: 'chat', input_price_per_million: 1.25, output_price_per_million: 10 } as CatalogEntry)).toBe(2477n);
  });

  it('is exact for the largest counts the usage columns hold, at prices of 15 significant digits', () => {
    // The largest price with 6 decimals that a YAML (or JS) number still holds exactly.
    const dearest = 999_999_999.999999;
    const maxed = {
      id: 'maxed', kind: 'chat', input_price_per_million: dearest, output_price_per_million: dearest, cached_input_price_per_million: 0.000001,
      cache_write_price_per_million: dearest, audio_input_price_per_million: 123456.789012, audio_output_price_per_million: 0,
    } as CatalogEntry;
    const max = MAX_TOKEN_COUNT;
    const third = Math.floor(max / 3);
    const block = usage(max, max, { cached_tokens: third, cache_write_tokens: third, audio_tokens: third }, { audio_tokens: max - 1 });
    const picos = (price: string) => BigInt(price.replace('.', ''));
    const expected =
      BigInt(max - 3 * third) * picos('999999999.999999') + BigInt(third) * 1n + BigInt(third) * picos('999999999.999999') +
      BigInt(third) * picos('123456.789012') + 1n * picos('999999999.999999') + BigInt(max - 1) * 0n;
    expect(micros(block, maxed)).toBe((expected + 999_999n) / 1_000_000n);
    // Far beyond 2^53, where floating point would have lost the micro-dollars: 2 × (2^31 − 1) × 999,999,999.999999 exactly.
    expect(micros(usage(max, max), maxed)).toBe(4_294_967_293_999_995_706n);
  });

  it("reads the Responses API's usage as the same classes (input_tokens_details, output_tokens_details)", () => {
    const responses = {
      input_tokens: 1000,
      input_tokens_details: { cached_tokens: 600, cache_write_tokens: 100 },
      output_tokens: 100,
      output_tokens_details: { reasoning_tokens: 40 },
      total_tokens: 1100,
    };
    expect(tokenUsageOf(responses)).toEqual(tokenUsageOf(usage(1000, 100, { cached_tokens: 600, cache_write_tokens: 100 }, { reasoning_tokens: 40 })));
    // 300 × 2.5 + 600 × 1.25 + 100 × 3.125 + 100 × 10 = 2,812.5 → 2,813
    expect(micros(responses)).toBe(2813n);
    const with1h = { ...responses, input_tokens_details: { cached_tokens: 600, cache_write_tokens: 100, cache_write_1h_tokens: 40 } };
    expect(tokenUsageOf(with1h)).toEqual(tokenUsageOf(usage(1000, 100, { cached_tokens: 600, cache_write_tokens: 100, cache_write_1h_tokens: 40 }, { reasoning_tokens: 40 })));
    expect(tokenUsageOf(with1h)).toMatchObject({ cacheWriteTokens: 100, cacheWrite1hTokens: 40 });
  });
});

describe(separatesCacheWrite1h.name, () => {
  it('tells a block that carries cache_write_1h_tokens (chat or Responses shape) from one that does not', () => {
    expect(separatesCacheWrite1h(usage(10, 1, { cache_write_tokens: 5, cache_write_1h_tokens: 0 }))).toBe(true);
    expect(separatesCacheWrite1h({ input_tokens: 10, output_tokens: 1, input_tokens_details: { cache_write_1h_tokens: 2 } })).toBe(true);
    expect(separatesCacheWrite1h(usage(10, 1, { cache_write_tokens: 5 }))).toBe(false);
    for (const block of [undefined, null, 'usage', { prompt_tokens: 10, completion_tokens: 1 }]) expect(separatesCacheWrite1h(block)).toBe(false);
  });
});

describe(worstCaseMicros.name, () => {
  it('prices the prompt at the highest input-class price and the output at the highest output-class price', () => {
    const prices = tokenPrices(PRICED);
    expect(prices).toMatchObject({ holdInput: 40_000_000n, holdOutput: 80_000_000n });
    expect(tokenPrices(BASE_ONLY)).toMatchObject({ holdInput: 2_500_000n, holdOutput: 10_000_000n });
    // The 1-hour cache-write price counts among the input classes' when it is the highest.
    expect(tokenPrices({ ...BASE_ONLY, cache_write_1h_price_per_million: 6 } as CatalogEntry)).toMatchObject({ holdInput: 6_000_000n });
    // 1,000 × 40 + 100 × 80
    expect(worstCaseMicros(1000, 100, prices.holdInput, prices.holdOutput)).toBe(48_000n);
  });

  it('is never exceeded by the cost of a usage within the prompt bound and the output allowance', () => {
    const price = fc.integer({ min: 0, max: 100_000_000 }).map((picos) => picos / 1_000_000);
    const optionalPrice = fc.option(price, { nil: undefined });
    fc.assert(
      fc.property(
        fc.record({ input: price, output: price, cached: optionalPrice, write: optionalPrice, write1h: optionalPrice, audioIn: optionalPrice, audioOut: optionalPrice }),
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.array(fc.integer({ min: 0, max: 1_000_000 }), { minLength: 6, maxLength: 6 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (p, promptBound, allowance, parts, promptShare, completionShare) => {
          const model = {
            id: 'any', kind: 'chat', input_price_per_million: p.input, output_price_per_million: p.output, cached_input_price_per_million: p.cached,
            cache_write_price_per_million: p.write, cache_write_1h_price_per_million: p.write1h, audio_input_price_per_million: p.audioIn,
            audio_output_price_per_million: p.audioOut,
          } as CatalogEntry;
          const prompt = Math.floor(promptBound * promptShare);
          const completion = Math.floor(allowance * completionShare);
          const block = usage(
            prompt,
            completion,
            { cached_tokens: parts[0], cache_write_tokens: parts[1], cache_write_1h_tokens: parts[5], audio_tokens: parts[2] },
            { audio_tokens: parts[3], reasoning_tokens: parts[4] },
          );
          const prices = tokenPrices(model);
          return requestCost(block, model)!.micros <= worstCaseMicros(promptBound, allowance, prices.holdInput, prices.holdOutput);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
