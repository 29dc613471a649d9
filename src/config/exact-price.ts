import { ValidateBy } from 'class-validator';

/** The decimal text of a price billing converts exactly (usdToMicros, src/common/money.ts): at most 12 integer digits and 6 decimals. */
export const EXACT_PRICE = /^\d{1,12}(\.\d{1,6})?$/;

/** Billing converts a price to integer pico-USD per token exactly (src/billing/token-prices.ts): at most 6 decimals, 12 integer digits. */
export function ExactPrice(): PropertyDecorator {
  return ValidateBy({
    name: 'exactPrice',
    validator: {
      // Not a number, or negative: IsNumber and Min say so. A number's text is its shortest round-trip form (1e-7 has none).
      validate: (price: unknown) => typeof price !== 'number' || price < 0 || EXACT_PRICE.test(String(price)),
      defaultMessage: () => '$property must have at most 6 decimals and 12 integer digits',
    },
  });
}
