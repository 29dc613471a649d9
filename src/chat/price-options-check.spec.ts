import 'reflect-metadata';
import { validateGatewayConfig } from '../config/gateway-config.loader';
import { PROVIDER_TYPES } from '../providers/provider-types';
import { CatalogEntry } from '../config/gateway-config.schema';
import { ErrorCode, GatewayError } from '../errors';
import { pricedOptions, pricedValues, refuseUnpricedBetas } from './price-options-check';

const PRICES = { input_price_per_million: 3, output_price_per_million: 15, max_output_tokens: 1000 };

/** Two catalog entries as the loader validates them: one with OpenAI's and Anthropic's variants, one with flat prices only. */
function entries(): { priced: CatalogEntry; flat: CatalogEntry } {
  const config = validateGatewayConfig({
    providers: { local: { type: 'local' } },
    catalog: [
      {
        id: 'priced', kind: 'chat', provider: 'local', upstream_model: 'dev-echo', ...PRICES,
        price_variants: [
          { when: { service_tier: ['priority', 'fast'] }, multiplier: 2 },
          { when: { service_tier: 'flex' }, multiplier: 0.5 },
          { when: { speed: 'fast' }, multiplier: 6 },
          { when: { inference_geo: 'us' }, multiplier: 1.1 },
        ],
      },
      { id: 'flat', kind: 'chat', provider: 'local', upstream_model: 'dev-echo', ...PRICES },
    ],
  }, PROVIDER_TYPES);
  const [priced, flat] = config.catalog;
  return { priced, flat };
}

function thrown(run: () => unknown): GatewayError {
  try {
    run();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a GatewayError');
}

describe('price-options-check', () => {
  const { priced, flat } = entries();

  describe(pricedOptions.name, () => {
    it.each<[string, Record<string, unknown>]>([
      ['nothing asked', {}],
      ['nulls', { service_tier: null, speed: null, inference_geo: null }],
      ["OpenAI's standard tiers", { service_tier: 'auto' }],
      ["OpenAI's default tier", { service_tier: 'default' }],
      ["Anthropic's standard_only", { service_tier: 'standard_only' }],
      ['the standard speed and the global region', { speed: 'standard', inference_geo: 'global' }],
    ])('takes %s as the flat prices, on a model without variants too', (_case, fields) => {
      expect(pricedOptions(flat, fields)).toBeUndefined();
      expect(pricedOptions(priced, fields)).toBeUndefined();
    });

    it('returns the non-standard options the model prices, and only those', () => {
      expect(pricedOptions(priced, { service_tier: 'fast', speed: 'fast', inference_geo: 'us', model: 'priced' })).toEqual({ service_tier: 'fast', speed: 'fast', inference_geo: 'us' });
      expect(pricedOptions(priced, { service_tier: 'flex', speed: 'standard' })).toEqual({ service_tier: 'flex' });
    });

    it.each<[string, Record<string, unknown>, string, RegExp]>([
      ['a tier', { service_tier: 'priority' }, 'service_tier', /service_tier "priority".*\(priced: none\)/],
      ['a speed', { speed: 'fast' }, 'speed', /speed "fast"/],
      ['a region', { inference_geo: 'us' }, 'inference_geo', /inference_geo "us"/],
    ])('refuses %s the model does not price: 400 unsupported_parameter naming the field', (_case, fields, param, message) => {
      const err = thrown(() => pricedOptions(flat, fields));
      expect(err).toMatchObject({ code: ErrorCode.UnsupportedParameter, status: 400, param });
      expect(err.message).toMatch(message);
      expect(err.message).toContain('"flat"');
    });

    it('names the values the model does price when it refuses another', () => {
      const err = thrown(() => pricedOptions(priced, { service_tier: 'scale' }));
      expect(err).toMatchObject({ code: ErrorCode.UnsupportedParameter, param: 'service_tier' });
      expect(err.message).toContain('(priced: "priority", "fast", "flex")');
      expect(thrown(() => pricedOptions(priced, { inference_geo: 'eu' })).message).toContain('(priced: "us")');
    });

    it('refuses the first unpriced option in the order tier, speed, region', () => {
      expect(thrown(() => pricedOptions(flat, { inference_geo: 'us', speed: 'fast' })).param).toBe('speed');
    });

    it('quotes at most 64 characters of a refused value', () => {
      const err = thrown(() => pricedOptions(flat, { service_tier: 'x'.repeat(10_000) }));
      expect(err.message).toContain(`"${'x'.repeat(64)}…"`);
      expect(err.message.length).toBeLessThan(400);
    });

    it.each([5, true, ['priority'], { tier: 'priority' }])('refuses a value that is not a string (%j): 400 invalid_request_error', (value) => {
      expect(thrown(() => pricedOptions(priced, { service_tier: value }))).toMatchObject({ code: ErrorCode.InvalidRequest, param: 'service_tier' });
    });

    it("checks only the options of the route's dialect", () => {
      expect(pricedOptions(flat, { speed: 'fast', inference_geo: 'us' }, ['service_tier'])).toBeUndefined();
      expect(thrown(() => pricedOptions(flat, { service_tier: 'flex' }, ['service_tier'])).param).toBe('service_tier');
    });

    it('reads only own fields: an inherited option is not asked for', () => {
      const fields = Object.create({ service_tier: 'priority' }) as Record<string, unknown>;
      expect(pricedOptions(flat, fields)).toBeUndefined();
    });
  });

  describe(refuseUnpricedBetas.name, () => {
    it.each<[string, string | string[] | undefined]>([
      ['no header', undefined],
      ['other betas', 'context-management-2025-06-27,interleaved-thinking-2025-05-14'],
      ['a beta that only starts alike', 'fast-modes-are-not-a-beta'],
    ])('lets %s through on any model', (_case, header) => {
      expect(() => refuseUnpricedBetas(flat, header)).not.toThrow();
    });

    it.each<[string, string | string[]]>([
      ['alone', 'fast-mode-2026-02-01'],
      ['in a list', 'context-management-2025-06-27, fast-mode-2026-02-01'],
      ['in a second header', ['context-management-2025-06-27', 'fast-mode-2026-02-01']],
    ])('refuses fast mode %s on a model that does not price speed "fast": param anthropic-beta', (_case, header) => {
      const err = thrown(() => refuseUnpricedBetas(flat, header));
      expect(err).toMatchObject({ code: ErrorCode.UnsupportedParameter, status: 400, param: 'anthropic-beta' });
      expect(err.message).toContain('"fast-mode-2026-02-01"');
    });

    it('lets fast mode through on a model that prices it', () => {
      expect(() => refuseUnpricedBetas(priced, 'context-management-2025-06-27,fast-mode-2026-02-01')).not.toThrow();
    });
  });

  describe(pricedValues.name, () => {
    it('lists each priced value once, in the order the variants name them', () => {
      expect(pricedValues(priced, 'service_tier')).toEqual(['priority', 'fast', 'flex']);
      expect(pricedValues(priced, 'speed')).toEqual(['fast']);
      expect(pricedValues(flat, 'inference_geo')).toEqual([]);
    });
  });
});
