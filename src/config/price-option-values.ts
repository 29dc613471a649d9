/**
 * What each option that changes an upstream's price means at the standard price (DESIGN.md section 12.2): a
 * request or answer with one of these values, or none, is priced as the catalog's flat prices.
 */
export const STANDARD_OPTION_VALUES = {
  service_tier: ['auto', 'default', 'standard', 'standard_only'],
  speed: ['standard'],
  // `not_available`: Anthropic's report for a model without a choice of region.
  inference_geo: ['global', 'not_available'],
} as const;
export type PriceOption = keyof typeof STANDARD_OPTION_VALUES;
export const PRICE_OPTIONS = Object.keys(STANDARD_OPTION_VALUES) as PriceOption[];
