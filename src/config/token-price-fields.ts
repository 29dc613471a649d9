/** A chat model's prices, USD per million tokens: the two of every chat model, then the token classes' (DESIGN.md section 10). */
export const TOKEN_PRICE_FIELDS = [
  'input_price_per_million',
  'output_price_per_million',
  'cached_input_price_per_million',
  'cache_write_price_per_million',
  'cache_write_1h_price_per_million',
  'audio_input_price_per_million',
  'audio_output_price_per_million',
] as const;
export type TokenPriceField = (typeof TOKEN_PRICE_FIELDS)[number];
