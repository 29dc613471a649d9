import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { requestCost } from '../src/billing/request-cost';
import { holdPrices } from '../src/billing/price-variants';
import { toolHoldPicos } from '../src/billing/tool-fees';
import { ConfigError, validateGatewayConfig } from '../src/config/gateway-config.loader';
import { PROVIDER_TYPES } from '../src/providers/provider-types';
import { CatalogEntry } from '../src/config/gateway-config.schema';
import { docBlocks } from './support/readme-blocks';

/**
 * docs/configuration.md, "Price variants and server-tool fees": its three sheets (```yaml price-sheet blocks) are
 * what an operator copies, so this loads them as written, and charges with them what the providers' sheets say.
 */
const PROVIDERS = {
  openai: { type: 'openai-compatible', base_url: 'https://api.openai.com/v1', api_key_env: 'OPENAI_API_KEY' },
  anthropic: { type: 'anthropic', base_url: 'https://api.anthropic.com', api_key_env: 'ANTHROPIC_API_KEY' },
  gemini: { type: 'gemini', base_url: 'https://generativelanguage.googleapis.com', api_key_env: 'GEMINI_API_KEY' },
};

function loadSheets(): Map<string, CatalogEntry> {
  const catalog = docBlocks('docs/configuration.md', 'yaml price-sheet').flatMap((block) => parse(block));
  const config = validateGatewayConfig({ providers: PROVIDERS, catalog }, PROVIDER_TYPES, 'docs/configuration.md');
  return new Map(config.catalog.map((entry) => [entry.id, entry]));
}

const chat = (prompt: number, completion: number, details: Record<string, number> = {}) => ({ prompt_tokens: prompt, completion_tokens: completion, prompt_tokens_details: details });

describe('the price sheets of docs/configuration.md', () => {
  const sheets = loadSheets();
  const entry = (id: string) => {
    const found = sheets.get(id);
    if (!found) throw new Error(`docs/configuration.md has no price sheet for ${id}`);
    return found;
  };

  it('are three catalog entries the start accepts', () => {
    expect([...sheets.keys()]).toEqual(['gpt-5', 'claude-opus-4-6', 'gemini-2.5-pro']);
  });

  it("charge OpenAI's tiers and long context as OpenAI's sheet does", () => {
    const gpt5 = entry('gpt-5');
    // 10,000 × 1.25 + 1,000 × 10 = 22,500 µUSD; priority 2×, flex ½.
    expect(requestCost(chat(10_000, 1000), gpt5)?.micros).toBe(22_500n);
    expect(requestCost(chat(10_000, 1000), gpt5, { answered: { service_tier: 'priority' } })?.micros).toBe(45_000n);
    expect(requestCost(chat(10_000, 1000), gpt5, { answered: { service_tier: 'flex' } })?.micros).toBe(11_250n);
    // Above 272k: (100,000 × 2.5 + 200,000 × 0.25 + 1,000 × 15) = 315,000; at priority 630,000.
    expect(requestCost(chat(300_000, 1000, { cached_tokens: 200_000 }), gpt5)?.micros).toBe(315_000n);
    expect(requestCost(chat(300_000, 1000, { cached_tokens: 200_000 }), gpt5, { answered: { service_tier: 'priority' } })?.micros).toBe(630_000n);
  });

  it("charge Anthropic's fast mode, US inference, long context with cache classes counted, and web search", () => {
    const opus = entry('claude-opus-4-6');
    // 1,000 × 5 + 100 × 25 = 7,500; fast 6× = 45,000; fast and US 6.6× = 49,500.
    expect(requestCost(chat(1000, 100), opus, { answered: { speed: 'fast' } })?.micros).toBe(45_000n);
    expect(requestCost(chat(1000, 100), opus, { answered: { speed: 'fast', inference_geo: 'us' } })?.micros).toBe(49_500n);
    // 150,000 cache reads and 60,000 cache writes pass 200k with 10,000 plain tokens:
    // 10,000 × 10 + 150,000 × 1 + 60,000 × 12.5 + 100 × 37.5 = 1,003,750.
    expect(requestCost(chat(220_000, 100, { cached_tokens: 150_000, cache_write_tokens: 60_000 }), opus)?.micros).toBe(1_003_750n);
    // Three searches at $0.01; the hold of a request without max_uses covers ten.
    expect(requestCost(chat(1000, 100), opus, { answered: { tool_uses: { web_search: 3, web_fetch: 2 } } })?.micros).toBe(7_500n + 30_000n);
    expect(toolHoldPicos(opus, { web_search: null })).toBe(100_000n * 1_000_000n);
  });

  it("charge Gemini 2.5 Pro's prices above 200k prompt tokens", () => {
    const pro = entry('gemini-2.5-pro');
    expect(requestCost(chat(200_000, 1000), pro)?.micros).toBe(260_000n);
    expect(requestCost(chat(200_001, 1000), pro)?.micros).toBe(515_003n);
    expect(holdPrices(pro, undefined, 250_000)).toEqual({ holdInput: 2_500_000n, holdOutput: 15_000_000n });
  });

  it('refuse a bad entry as the docs quote it', () => {
    const catalog = parse(docBlocks('docs/configuration.md', 'yaml price-sheet')[0]);
    catalog[0].price_variants[1].when.service_tier = 'default';
    let message = '';
    try {
      validateGatewayConfig({ providers: PROVIDERS, catalog }, PROVIDER_TYPES, 'config/gateway.yaml');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toContain('price_variants[1].when.service_tier');
    expect(readFileSync(join(__dirname, '..', 'docs', 'configuration.md'), 'utf8')).toContain(`\n\`\`\`\n${message}\n\`\`\`\n`);
  });
});
