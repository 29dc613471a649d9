import { PriceOption, STANDARD_OPTION_VALUES } from './price-option-values';
import type { PriceCondition, PriceSheetFields } from './price-variants.schema';

export { PRICE_OPTIONS, STANDARD_OPTION_VALUES } from './price-option-values';
export type { PriceOption } from './price-option-values';

/**
 * The options that change an upstream's price (DESIGN.md section 12.2), as a request asks for them or an answer
 * reports them: `service_tier` (OpenAI's `priority`/`fast`/`flex`, Anthropic's usage.service_tier, Gemini's
 * x-gemini-service-tier, Bedrock's serviceTier), `speed` (Anthropic's fast mode), `inference_geo` (Anthropic's
 * data residency). Absent, or a standard value (STANDARD_OPTION_VALUES): the catalog's flat prices.
 */
export interface PriceOptions {
  service_tier?: string;
  speed?: string;
  inference_geo?: string;
}

export function isStandardOption(option: PriceOption, value: string | undefined): boolean {
  return value === undefined || (STANDARD_OPTION_VALUES[option] as readonly string[]).includes(value);
}

/** Whether a value of an option has a price in the entry: a standard one always; another when some variant names it. */
export function pricesOption(model: PriceSheetFields, option: PriceOption, value: string | undefined): boolean {
  return isStandardOption(option, value) || (model.price_variants ?? []).some((variant) => conditionNames(variant.when, option, value!));
}

/** Whether a variant's condition on this option holds for the value (a condition it does not set holds for none). */
export function conditionNames(when: PriceCondition, option: PriceOption, value: string): boolean {
  const named = when[option];
  return Array.isArray(named) ? named.includes(value) : named === value;
}

/** The fee of a server tool in USD per use, when the entry prices it (`tool_fees`); a tool it does not price is withdrawn. */
export function toolFee(model: PriceSheetFields, tool: string): number | undefined {
  const fees = model.tool_fees;
  return fees && Object.prototype.hasOwnProperty.call(fees, tool) ? fees[tool] : undefined;
}
