import type { CatalogEntry } from '../config/gateway-config.schema';
import { TOKEN_PRICE_FIELDS, TokenPriceField } from '../config/token-price-fields';
import { ErrorCode, GatewayError } from '../errors';
import { usdToMicros } from '../common/money';

/**
 * A chat model's price of each token class (DESIGN.md section 10) as exact integers: pico-USD per token
 * (= USD per million tokens × 10^6). A class without a price of its own costs its total's price (the 1-hour
 * cache writes, a part of the cache writes: the cache-write price).
 */
export interface TokenPrices {
  input: bigint;
  cachedInput: bigint;
  cacheWrite: bigint;
  /** 1-hour cache writes, a part of the cache writes (their own price, else the cache-write price). */
  cacheWrite1h: bigint;
  audioInput: bigint;
  output: bigint;
  audioOutput: bigint;
  /** What the hold prices every prompt token at: the highest input-class price. */
  holdInput: bigint;
  /** What the hold prices every output token at: the highest output-class price. */
  holdOutput: bigint;
}

/** Prices are read once per catalog entry (the entries live as long as the process). */
const converted = new WeakMap<CatalogEntry, TokenPrices>();

export function tokenPrices(model: CatalogEntry): TokenPrices {
  let prices = converted.get(model);
  if (!prices) {
    prices = convert(model);
    converted.set(model, prices);
  }
  return prices;
}

/**
 * USD per million tokens is micro-USD per token, so the decimal-exact micro conversion of the
 * price gives pico-USD per token with no float arithmetic.
 */
function convert(model: CatalogEntry): TokenPrices {
  const picos = Object.fromEntries(TOKEN_PRICE_FIELDS.map((field) => [field, priceToPicos(model, field)])) as Record<TokenPriceField, bigint | null>;
  const input = picos.input_price_per_million ?? 0n;
  const output = picos.output_price_per_million ?? 0n;
  const cacheWrite = picos.cache_write_price_per_million ?? input;
  const prices = {
    input,
    cachedInput: picos.cached_input_price_per_million ?? input,
    cacheWrite,
    cacheWrite1h: picos.cache_write_1h_price_per_million ?? cacheWrite,
    audioInput: picos.audio_input_price_per_million ?? input,
    output,
    audioOutput: picos.audio_output_price_per_million ?? output,
  };
  return {
    ...prices,
    holdInput: max(prices.input, prices.cachedInput, prices.cacheWrite, prices.cacheWrite1h, prices.audioInput),
    holdOutput: max(prices.output, prices.audioOutput),
  };
}

/** Null for a price the entry does not set. */
function priceToPicos(model: CatalogEntry, field: TokenPriceField): bigint | null {
  const price = model[field];
  if (price === undefined || price === null) return null;
  const picos = usdToMicros(price);
  if (picos === null) {
    // The config check refuses such a price at start (gateway-config.schema.ts): a catalog built elsewhere.
    throw new GatewayError(ErrorCode.ConfigError, `Model ${model.id}: ${field} must be a non-negative price with at most 6 decimals.`);
  }
  return picos;
}

function max(...values: bigint[]): bigint {
  return values.reduce((a, b) => (a > b ? a : b));
}
