import type { CatalogEntry } from '../config/gateway-config.schema';
import { isStandardOption, PRICE_OPTIONS, PriceOption, PriceOptions, pricesOption } from '../config/price-options';
import { invalidField, unsupportedField } from '../errors';

/**
 * Never forwarded unpriced (DESIGN.md section 12.2): every route reads the options of its dialect that change an
 * upstream's price through here, before any hold or upstream call.
 */

/** The prefix of Anthropic's fast-mode betas (`fast-mode-2026-02-01`: https://platform.claude.com/docs/en/build-with-claude/fast-mode). */
export const FAST_MODE_BETA_PREFIX = 'fast-mode-';
/** The most of a refused value a message quotes: a client's value is not ours to echo at any length. */
const QUOTED_LENGTH = 64;

/**
 * The options `fields` asks for among `options` (null or absent: not asked), each one its model prices: a value
 * that is not a string is 400 `invalid_request_error`, a non-standard value the entry does not price is 400
 * `unsupported_parameter`, both naming the field. Returns the non-standard ones (undefined when there are none):
 * standard values are the flat prices, as if not sent.
 */
export function pricedOptions(model: CatalogEntry, fields: Record<string, unknown>, options: readonly PriceOption[] = PRICE_OPTIONS): PriceOptions | undefined {
  let priced: PriceOptions | undefined;
  for (const option of options) {
    const value = optionValue(fields, option);
    if (isStandardOption(option, value)) continue;
    if (!pricesOption(model, option, value)) throw unpricedOption(model, option, value!);
    priced = { ...priced, [option]: value };
  }
  return priced;
}

/**
 * Refuses an `anthropic-beta` header that asks for fast mode (a `fast-mode-…` value, alone or in a comma-separated
 * list, in one header or several) on a model that does not price `speed: "fast"`: 400 `unsupported_parameter`,
 * param `anthropic-beta`. The header alone does not make a request fast (`speed` does), so it adds no price option.
 */
export function refuseUnpricedBetas(model: CatalogEntry, header: string | string[] | undefined): void {
  if (header === undefined || pricesOption(model, 'speed', 'fast')) return;
  const values = (Array.isArray(header) ? header : [header]).flatMap((value) => value.split(','));
  const fastMode = values.map((value) => value.trim()).find((value) => value.startsWith(FAST_MODE_BETA_PREFIX));
  if (fastMode !== undefined) {
    throw unsupportedField(
      'anthropic-beta',
      `${quoted(fastMode)} asks for fast mode, and the model "${model.id}" has no price for speed "fast" on this gateway. Leave it out for the standard speed.`,
    );
  }
}

/** The values of an option the entry prices beyond the standard ones, in the order its variants name them. */
export function pricedValues(model: CatalogEntry, option: PriceOption): string[] {
  const values = (model.price_variants ?? []).flatMap((variant) => {
    const named = variant.when[option];
    return named === undefined ? [] : Array.isArray(named) ? named : [named];
  });
  return [...new Set(values)];
}

/** An option's value as sent: a string, or undefined when absent or null. */
function optionValue(fields: Record<string, unknown>, option: PriceOption): string | undefined {
  if (!Object.prototype.hasOwnProperty.call(fields, option)) return undefined;
  const value = fields[option];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidField(option, `${option} must be a string.`);
  return value;
}

function unpricedOption(model: CatalogEntry, option: PriceOption, value: string) {
  const priced = pricedValues(model, option);
  const offered = priced.length === 0 ? 'none' : priced.map(quoted).join(', ');
  return unsupportedField(
    option,
    `the model "${model.id}" has no price for ${option} ${quoted(value)} on this gateway (priced: ${offered}), so it is not sent upstream. Leave ${option} out for the standard service.`,
  );
}

function quoted(value: string): string {
  return JSON.stringify(value.length > QUOTED_LENGTH ? `${value.slice(0, QUOTED_LENGTH)}…` : value);
}
