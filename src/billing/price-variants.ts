import type { CatalogEntry } from '../config/gateway-config.schema';
import { conditionNames, isStandardOption, PRICE_OPTIONS, PriceOptions, pricesOption } from '../config/price-options';
import type { PriceCondition } from '../config/price-variants.schema';
import { TokenPrices, variantPrices } from './token-prices';

/**
 * Price variants (DESIGN.md section 12.2): which of a catalog entry's `price_variants` a request's outcome
 * matches, as a bitmask in catalog order (bit i: `price_variants[i]`), and the prices a hold covers.
 */

/** The variants whose every condition holds for these options and input tokens (plain, cached and cache writes). */
export function matchingVariants(model: CatalogEntry, options: PriceOptions, inputTokens: number): number {
  const variants = model.price_variants;
  if (!variants) return 0;
  let mask = 0;
  variants.forEach(({ when }, i) => {
    if (holds(when, options, inputTokens)) mask |= 1 << i;
  });
  return mask;
}

/** The `when` of each variant of the mask, in order: what a usage record names as the variants applied. */
export function variantConditions(model: CatalogEntry, mask: number): PriceCondition[] {
  return (model.price_variants ?? []).filter((_, i) => (mask & (1 << i)) !== 0).map(({ when }) => when);
}

/**
 * The options as priced: each non-standard one the entry prices, and the name (`service_tier:priority`) of each
 * it does not (such an answer is charged at the standard price of that option: ChatService logs and counts it).
 */
export function splitUnpriced(model: CatalogEntry, options: PriceOptions): { options: PriceOptions; unpriced: string[] } {
  const priced: PriceOptions = {};
  const unpriced: string[] = [];
  for (const option of PRICE_OPTIONS) {
    const value = options[option];
    if (isStandardOption(option, value)) continue;
    if (pricesOption(model, option, value)) priced[option] = value;
    else unpriced.push(`${option}:${value}`);
  }
  return { options: priced, unpriced };
}

/**
 * The prices a hold covers (DESIGN.md section 12.2): the dearest outcome the request can end at. Each option it
 * asked for may be honoured or downgraded to standard, and its input may stay under or pass each
 * `prompt_tokens_over` its upper bound passes: every class's highest price among those outcomes.
 */
export function holdPrices(model: CatalogEntry, asked: PriceOptions | undefined, promptBound: number): Pick<TokenPrices, 'holdInput' | 'holdOutput'> {
  const variants = model.price_variants;
  if (!variants) return variantPrices(model, 0);
  const { options } = splitUnpriced(model, asked ?? {});
  const inputs = [0, ...variants.flatMap(({ when }) => (when.prompt_tokens_over !== undefined && when.prompt_tokens_over < promptBound ? [when.prompt_tokens_over + 1] : []))];
  let holdInput = 0n;
  let holdOutput = 0n;
  for (const outcome of downgrades(options)) {
    for (const inputTokens of inputs) {
      const prices = variantPrices(model, matchingVariants(model, outcome, inputTokens));
      if (prices.holdInput > holdInput) holdInput = prices.holdInput;
      if (prices.holdOutput > holdOutput) holdOutput = prices.holdOutput;
    }
  }
  return { holdInput, holdOutput };
}

/** Every subset of the options (each honoured, or left out: standard). At most 2^3. */
function downgrades(options: PriceOptions): PriceOptions[] {
  let outcomes: PriceOptions[] = [{}];
  for (const option of PRICE_OPTIONS) {
    const value = options[option];
    if (value !== undefined) outcomes = outcomes.flatMap((o) => [o, { ...o, [option]: value }]);
  }
  return outcomes;
}

function holds(when: PriceCondition, options: PriceOptions, inputTokens: number): boolean {
  for (const option of PRICE_OPTIONS) {
    if (when[option] === undefined) continue;
    const value = options[option];
    if (value === undefined || !conditionNames(when, option, value)) return false;
  }
  return when.prompt_tokens_over === undefined || inputTokens > when.prompt_tokens_over;
}
