import type { CatalogEntry } from '../config/gateway-config.schema';
import { TOKEN_PRICE_FIELDS, TokenPriceField } from '../config/token-price-fields';
import type { PriceVariant } from '../config/price-variants.schema';
import { ErrorCode, GatewayError } from '../errors';
import { usdToMicros } from '../common/money';

/**
 * A chat model's price of each token class (DESIGN.md section 10) as exact integers: pico-USD per token
 * (= USD per million tokens × 10^6) times `scale`. A class without a price of its own costs its total's price
 * (the 1-hour cache writes, a part of the cache writes: the cache-write price). The flat prices have scale 1;
 * each multiplier of a price variant (DESIGN.md section 12.2, at most 6 decimals) multiplies the scale by 10^6,
 * so that 1.1 × a price is exact, and the cost is rounded once, at the end (request-cost.ts).
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
  /** What each price above is a multiple of, in pico-USD per token: 1, or 10^6 per multiplier applied. */
  scale: bigint;
  /** What the hold prices every prompt token at, in whole pico-USD: the highest input-class price, rounded up. */
  holdInput: bigint;
  /** What the hold prices every output token at, in whole pico-USD: the highest output-class price, rounded up. */
  holdOutput: bigint;
}

/** Prices are read once per catalog entry and set of variants (the entries live as long as the process). */
const converted = new WeakMap<CatalogEntry, Map<number, TokenPrices>>();

/** The entry's flat prices. */
export function tokenPrices(model: CatalogEntry): TokenPrices {
  return variantPrices(model, 0);
}

/** The entry's prices with the variants of `mask` applied (bit i: `price_variants[i]`), in the catalog's order. */
export function variantPrices(model: CatalogEntry, mask: number): TokenPrices {
  let byMask = converted.get(model);
  if (!byMask) {
    byMask = new Map();
    converted.set(model, byMask);
  }
  let prices = byMask.get(mask);
  if (!prices) {
    prices = convert(model, mask);
    byMask.set(mask, prices);
  }
  return prices;
}

/** Each class's own price (scaled), or null when it costs its total's price. */
type OwnPrices = Record<TokenPriceField, bigint | null>;

/**
 * USD per million tokens is micro-USD per token, so the decimal-exact micro conversion of the price gives
 * pico-USD per token with no float arithmetic; a multiplier's micro conversion is the multiplier × 10^6.
 */
function convert(model: CatalogEntry, mask: number): TokenPrices {
  const own = Object.fromEntries(TOKEN_PRICE_FIELDS.map((field) => [field, priceToPicos(model.id, model, field)])) as OwnPrices;
  let scale = 1n;
  (model.price_variants ?? []).forEach((variant, i) => {
    if ((mask & (1 << i)) === 0) return;
    if (variant.multiplier !== undefined) {
      const factor = toExact(model.id, variant.multiplier, `price_variants[${i}].multiplier`);
      scale *= 1_000_000n;
      // The classes that cost their total's price follow it: multiplying the ones set multiplies them all.
      for (const field of TOKEN_PRICE_FIELDS) if (own[field] !== null) own[field] = own[field]! * factor;
      own.input_price_per_million ??= 0n;
      own.output_price_per_million ??= 0n;
    }
    for (const field of TOKEN_PRICE_FIELDS) {
      const picos = priceToPicos(`${model.id} price_variants[${i}]`, variant, field);
      if (picos !== null) own[field] = picos * scale;
    }
  });
  const input = own.input_price_per_million ?? 0n;
  const output = own.output_price_per_million ?? 0n;
  const cacheWrite = own.cache_write_price_per_million ?? input;
  const prices = {
    input,
    cachedInput: own.cached_input_price_per_million ?? input,
    cacheWrite,
    cacheWrite1h: own.cache_write_1h_price_per_million ?? cacheWrite,
    audioInput: own.audio_input_price_per_million ?? input,
    output,
    audioOutput: own.audio_output_price_per_million ?? output,
  };
  return {
    ...prices,
    scale,
    holdInput: ceilDiv(max(prices.input, prices.cachedInput, prices.cacheWrite, prices.cacheWrite1h, prices.audioInput), scale),
    holdOutput: ceilDiv(max(prices.output, prices.audioOutput), scale),
  };
}

/** Null for a price the entry (or variant) does not set. */
function priceToPicos(owner: string, prices: CatalogEntry | PriceVariant, field: TokenPriceField): bigint | null {
  const price = prices[field];
  if (price === undefined || price === null) return null;
  return toExact(owner, price, field);
}

function toExact(owner: string, value: number, field: string): bigint {
  const micros = usdToMicros(value);
  if (micros === null) {
    // The config check refuses such a value at start (gateway-config.schema.ts): a catalog built elsewhere.
    throw new GatewayError(ErrorCode.ConfigError, `Model ${owner}: ${field} must be a non-negative number with at most 6 decimals.`);
  }
  return micros;
}

export function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

function max(...values: bigint[]): bigint {
  return values.reduce((a, b) => (a > b ? a : b));
}
