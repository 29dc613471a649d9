import { CatalogEntry } from '../config/gateway-config.schema';
import { ErrorCode, GatewayError } from '../errors';
import { usdToMicros } from '../common/money';

/** A chat model's prices as exact integers: pico-USD per token (= USD per million tokens × 10^6). */
export interface TokenPrices {
  inputPicos: bigint;
  outputPicos: bigint;
}

/**
 * USD per million tokens is micro-USD per token, so the decimal-exact micro conversion of the
 * price gives pico-USD per token with no float arithmetic.
 */
export function tokenPrices(model: CatalogEntry): TokenPrices {
  return {
    inputPicos: priceToPicos(model, 'input_price_per_million'),
    outputPicos: priceToPicos(model, 'output_price_per_million'),
  };
}

function priceToPicos(model: CatalogEntry, field: 'input_price_per_million' | 'output_price_per_million'): bigint {
  const picos = usdToMicros(model[field] ?? 0);
  if (picos === null) {
    throw new GatewayError(
      ErrorCode.ConfigError,
      `Model ${model.id}: ${field} must be a non-negative price with at most 6 decimals.`,
    );
  }
  return picos;
}

/** Micro-USD for a token count, rounded half up once: SQL's billing_cost_micros, to the micro-dollar. */
export function costMicros(promptTokens: number, completionTokens: number, inputPicos: bigint, outputPicos: bigint): bigint {
  return (BigInt(promptTokens) * inputPicos + BigInt(completionTokens) * outputPicos + 500_000n) / 1_000_000n;
}
