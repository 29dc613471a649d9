import 'reflect-metadata';
import { validateGatewayConfig, ConfigError } from './gateway-config.loader';
import { PROVIDER_TYPES } from '../providers/provider-types';

type Raw = Record<string, any>;

/** A catalog of one chat model with the price sheet given. */
function withSheet(sheet: Raw): Raw {
  return {
    providers: { openai: { type: 'openai-compatible', base_url: 'https://api.openai.com/v1', api_key_env: 'OPENAI_API_KEY' } },
    catalog: [{ id: 'gpt-5', kind: 'chat', provider: 'openai', upstream_model: 'gpt-5', input_price_per_million: 1.25, output_price_per_million: 10, max_output_tokens: 128000, ...sheet }],
  };
}

function problemsOf(sheet: Raw): string {
  try {
    validateGatewayConfig(withSheet(sheet), PROVIDER_TYPES, 'gateway.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('price variants and tool fees in the catalog (DESIGN.md section 12.2)', () => {
  it("accepts DESIGN's example sheet, and defaults tool_hold_uses to 10", () => {
    const config = validateGatewayConfig(
      withSheet({
        price_variants: [
          { when: { service_tier: ['priority', 'fast'] }, multiplier: 2 },
          { when: { service_tier: 'flex' }, multiplier: 0.5 },
          { when: { prompt_tokens_over: 272000 }, input_price_per_million: 2.5, output_price_per_million: 15.0 },
          { when: { speed: 'fast' }, multiplier: 6 },
          { when: { inference_geo: 'us' }, multiplier: 1.1 },
        ],
        tool_fees: { web_search: 0.01, web_fetch: 0 },
      }), PROVIDER_TYPES,
    );
    expect(config.catalog[0].price_variants).toHaveLength(5);
    expect(config.catalog[0].tool_hold_uses).toBe(10);
  });

  it.each([
    ['an unknown condition', { price_variants: [{ when: { region: 'us' }, multiplier: 2 }] }, /catalog\[0\]\.price_variants\[0\]\.when\.region: unknown key/],
    ['an empty condition', { price_variants: [{ when: {}, multiplier: 2 }] }, /catalog\[0\]\.price_variants\[0\]\.when: .*at least one of/],
    ['a standard tier (it could never apply)', { price_variants: [{ when: { service_tier: 'default' }, multiplier: 2 }] }, /price_variants\[0\]\.when\.service_tier: .*none of them standard/],
    ['a variant that changes no price', { price_variants: [{ when: { speed: 'fast' } }] }, /catalog\[0\]\.price_variants: .*each with a multiplier or a price/],
    ['a multiplier of 7 decimals', { price_variants: [{ when: { speed: 'fast' }, multiplier: 1.0000001 }] }, /price_variants\[0\]\.multiplier: .*at most 6 decimals/],
    ['a zero multiplier', { price_variants: [{ when: { speed: 'fast' }, multiplier: 0 }] }, /price_variants\[0\]\.multiplier/],
    ['a variant price finer than 6 decimals', { price_variants: [{ when: { prompt_tokens_over: 1 }, input_price_per_million: 0.0000001 }] }, /price_variants\[0\]\.input_price_per_million/],
    ['an unknown price field', { price_variants: [{ when: { prompt_tokens_over: 1 }, input_price: 2 }] }, /price_variants\[0\]\.input_price: unknown key/],
    ['a negative threshold', { price_variants: [{ when: { prompt_tokens_over: -1 }, multiplier: 2 }] }, /when\.prompt_tokens_over/],
    ['seventeen variants', { price_variants: Array.from({ length: 17 }, (_, i) => ({ when: { prompt_tokens_over: i }, multiplier: 2 })) }, /at most 16 variants/],
    ['a fee that is not a price', { tool_fees: { web_search: '0.01' } }, /catalog\[0\]\.tool_fees: .*USD per use/],
    ['a fee finer than a micro-dollar', { tool_fees: { web_search: 0.0000001 } }, /catalog\[0\]\.tool_fees/],
    ['a tool name of another alphabet', { tool_fees: { 'Web Search': 0.01 } }, /catalog\[0\]\.tool_fees/],
    ['a negative tool_hold_uses', { tool_fees: { web_search: 0.01 }, tool_hold_uses: -1 }, /catalog\[0\]\.tool_hold_uses/],
  ])('stops the start on %s, naming the field', (_, sheet, expected) => {
    expect(problemsOf(sheet)).toMatch(expected);
  });
});
