import 'reflect-metadata';
import fc from 'fast-check';
import { plainToInstance } from 'class-transformer';
import { CatalogEntry } from '../config/gateway-config.schema';
import { holdPrices } from './price-variants';
import { requestCost, worstCaseMicros } from './request-cost';
import { toolHoldPicos } from './tool-fees';

/** A sheet written as DESIGN.md section 12.2 shows it: OpenAI's tiers and long context, Anthropic's fast mode and geography. */
const SHEET = plainToInstance(CatalogEntry, {
  id: 'sheet',
  kind: 'chat',
  provider: 'p',
  upstream_model: 'm',
  input_price_per_million: 1.25,
  cached_input_price_per_million: 0.125,
  output_price_per_million: 10,
  max_output_tokens: 1000,
  price_variants: [
    { when: { prompt_tokens_over: 272000 }, input_price_per_million: 2.5, output_price_per_million: 15 },
    { when: { service_tier: ['priority', 'fast'] }, multiplier: 2 },
    { when: { service_tier: 'flex' }, multiplier: 0.5 },
    { when: { speed: 'fast' }, multiplier: 6 },
    { when: { inference_geo: 'us' }, multiplier: 1.1 },
  ],
  tool_fees: { web_search: 0.01, web_fetch: 0 },
  tool_hold_uses: 10,
});

const usage = (prompt: number, completion: number, cached = 0) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  prompt_tokens_details: { cached_tokens: cached },
});

describe('price variants', () => {
  it('charges the flat prices when nothing is asked or reported', () => {
    // 1,000 × 1.25 + 100 × 10 = 2,250 µUSD
    expect(requestCost(usage(1000, 100), SHEET)).toMatchObject({ micros: 2250n, variants: [], tools: [], unpriced: [] });
  });

  it('multiplies every class by the tier the answer reports, over the one asked', () => {
    // asked flex, ran priority: (900 × 1.25 + 100 × 0.125 + 100 × 10) × 2 = 4,275 µUSD
    const cost = requestCost(usage(1000, 100, 100), SHEET, { asked: { service_tier: 'flex' }, answered: { service_tier: 'priority' } });
    expect(cost).toMatchObject({ micros: 4275n, variants: [{ service_tier: ['priority', 'fast'] }] });
  });

  it('bills a downgraded request as it ran', () => {
    expect(requestCost(usage(1000, 100), SHEET, { asked: { service_tier: 'priority' }, answered: { service_tier: 'default' } })?.micros).toBe(2250n);
    expect(requestCost(usage(1000, 100), SHEET, { asked: { speed: 'fast' }, answered: { speed: 'standard' } })?.micros).toBe(2250n);
  });

  it("falls back on the request's options when the answer is silent", () => {
    expect(requestCost(usage(1000, 100), SHEET, { asked: { service_tier: 'flex' } })?.micros).toBe(1125n);
  });

  it('reprices the whole request above a prompt size, counting cached input, and keeps the classes not named', () => {
    // 272,001 prompt tokens of which 200,000 cached: 72,001 × 2.5 + 200,000 × 0.125 + 10 × 15 = 205,152.5 → 205,153 µUSD
    const cost = requestCost(usage(272_001, 10, 200_000), SHEET);
    expect(cost).toMatchObject({ micros: 205_153n, variants: [{ prompt_tokens_over: 272000 }] });
    expect(requestCost(usage(272_000, 10, 200_000), SHEET)?.variants).toEqual([]);
  });

  it('applies matching variants in order, rounding once at the end', () => {
    // fast (× 6) then us (× 1.1): 7 × 1.25 × 6.6 = 57.75; 3 × 10 × 6.6 = 198 → 255.75 → 256 µUSD (each rounded alone: 58 + 198)
    const cost = requestCost(usage(7, 3), SHEET, { answered: { speed: 'fast', inference_geo: 'us' } });
    expect(cost).toMatchObject({ micros: 256n, variants: [{ speed: 'fast' }, { inference_geo: 'us' }] });
    // Long context replaces the prices, then the tier multiplies them: (300,000 × 2.5 + 100 × 15) × 2 = 1,503,000
    expect(requestCost(usage(300_000, 100), SHEET, { answered: { service_tier: 'priority' } })?.micros).toBe(1_503_000n);
    // Listed the other way round, the long-context prices replace the doubled ones: 300,000 × 2.5 + 100 × 15.
    const reversed = plainToInstance(CatalogEntry, { ...SHEET, price_variants: [SHEET.price_variants![1], SHEET.price_variants![0]] });
    expect(requestCost(usage(300_000, 100), reversed, { answered: { service_tier: 'priority' } })?.micros).toBe(751_500n);
  });

  it('charges an option the entry does not price at the standard price, and names it', () => {
    const flat = plainToInstance(CatalogEntry, { ...SHEET, price_variants: undefined });
    expect(requestCost(usage(1000, 100), flat, { answered: { service_tier: 'priority' } })).toMatchObject({ micros: 2250n, unpriced: ['service_tier:priority'] });
    expect(requestCost(usage(1000, 100), SHEET, { answered: { inference_geo: 'eu' } })).toMatchObject({ micros: 2250n, unpriced: ['inference_geo:eu'] });
  });

  it('adds each server tool’s uses × fee, and names a tool the entry does not price', () => {
    const cost = requestCost(usage(1000, 100), SHEET, { answered: { tool_uses: { web_search: 3, web_fetch: 2, code_execution: 1 } } });
    expect(cost?.micros).toBe(2250n + 30_000n);
    expect(cost?.tools).toEqual([
      { name: 'web_search', uses: 3, micros: 30_000n },
      { name: 'web_fetch', uses: 2, micros: 0n },
    ]);
    expect(cost?.unpriced).toEqual(['tool:code_execution']);
  });

  it('holds for the dearest outcome the request asked for', () => {
    expect(holdPrices(SHEET, undefined, 1000)).toEqual({ holdInput: 1_250_000n, holdOutput: 10_000_000n });
    // Asked flex: the upstream may still run it at standard.
    expect(holdPrices(SHEET, { service_tier: 'flex' }, 1000)).toEqual({ holdInput: 1_250_000n, holdOutput: 10_000_000n });
    expect(holdPrices(SHEET, { service_tier: 'priority' }, 1000)).toEqual({ holdInput: 2_500_000n, holdOutput: 20_000_000n });
    // A prompt bound past the threshold holds at the long-context prices, with the tier asked: 2.5 × 2, 15 × 2.
    expect(holdPrices(SHEET, { service_tier: 'priority' }, 272_001)).toEqual({ holdInput: 5_000_000n, holdOutput: 30_000_000n });
    // fast × us: 1.25 × 6.6 = 8.25, 10 × 6.6 = 66.
    expect(holdPrices(SHEET, { speed: 'fast', inference_geo: 'us' }, 10)).toEqual({ holdInput: 8_250_000n, holdOutput: 66_000_000n });
  });

  it('holds the tools’ fees × max_uses, else tool_hold_uses', () => {
    expect(toolHoldPicos(SHEET, { web_search: 5 })).toBe(50_000n * 1_000_000n);
    expect(toolHoldPicos(SHEET, { web_search: null, web_fetch: null })).toBe(100_000n * 1_000_000n);
  });

  it('never charges more than the hold of what was asked, whatever the upstream reports within it', () => {
    const tiers = fc.constantFrom(undefined, 'default', 'priority', 'flex');
    const speeds = fc.constantFrom(undefined, 'standard', 'fast');
    const geos = fc.constantFrom(undefined, 'global', 'us');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400_000 }), fc.integer({ min: 0, max: 1000 }), fc.nat(), tiers, speeds, geos, fc.boolean(), (prompt, completion, cachedSeed, tier, speed, geo, honoured) => {
        const cached = prompt === 0 ? 0 : cachedSeed % (prompt + 1);
        const asked = { service_tier: tier, speed, inference_geo: geo };
        const answered = honoured ? asked : {};
        const cost = requestCost(usage(prompt, completion, cached), SHEET, { asked, answered })!;
        const hold = holdPrices(SHEET, asked, prompt);
        expect(cost.micros).toBeLessThanOrEqual(worstCaseMicros(prompt, completion, hold.holdInput, hold.holdOutput));
      }),
    );
  });
});
