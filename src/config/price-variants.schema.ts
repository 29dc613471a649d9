import { Type } from 'class-transformer';
import { IsInt, IsNumber, IsObject, IsOptional, Max, Min, ValidateBy, ValidateIf, ValidateNested, ValidationArguments } from 'class-validator';
import { EXACT_PRICE, ExactPrice } from './exact-price';
import { PriceOption, STANDARD_OPTION_VALUES } from './price-option-values';

/** A variant's multiplier: positive, at most 6 decimals (billing multiplies exactly: src/billing/price-variants.ts). */
const EXACT_MULTIPLIER = /^\d{1,6}(\.\d{1,6})?$/;
/** How many variants one entry may list: billing keys its price tables by the set applied, one bit per variant. */
export const MAX_PRICE_VARIANTS = 16;
/** What a tool's name may hold (`web_search`): the family of the dated types the upstreams use. */
const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** An option's values as a variant names them: one, or a non-empty list; never a standard one (it could not apply). */
function OptionValues(option: PriceOption): PropertyDecorator {
  const standard: readonly string[] = STANDARD_OPTION_VALUES[option];
  return ValidateBy({
    name: 'optionValues',
    validator: {
      validate: (value: unknown) => {
        const values = Array.isArray(value) ? value : [value];
        return values.length > 0 && values.every((v) => typeof v === 'string' && v.length > 0 && !standard.includes(v));
      },
      defaultMessage: () => `$property must be a value or a non-empty list of values, none of them standard (${standard.join(', ')})`,
    },
  });
}

/** When a variant applies: every condition it names holds (at least one). */
export class PriceCondition {
  @ValidateIf(isGiven) @OptionValues('service_tier') service_tier?: string | string[];
  @ValidateIf(isGiven) @OptionValues('speed') speed?: string | string[];
  @ValidateIf(isGiven) @OptionValues('inference_geo') inference_geo?: string | string[];
  /** The request's input tokens (plain, cached and cache writes together) above this many. */
  @ValidateIf(isGiven) @IsInt() @Min(0) prompt_tokens_over?: number;
}

/**
 * One line of a provider's price sheet beyond its flat prices: when it applies, every class's current price
 * × `multiplier`, then the classes it names at their own prices (a long-context sheet's).
 */
export class PriceVariant {
  @IsObject() @ValidateNested() @Type(() => PriceCondition) @HasCondition() when: PriceCondition;
  @ValidateIf(isGiven) @IsNumber() @Min(0.000001) @ExactMultiplier() multiplier?: number;
  @ValidateIf(isGiven) @IsNumber() @Min(0) @ExactPrice() input_price_per_million?: number;
  @ValidateIf(isGiven) @IsNumber() @Min(0) @ExactPrice() output_price_per_million?: number;
  @ValidateIf(isGiven) @IsNumber() @Min(0) @ExactPrice() cached_input_price_per_million?: number;
  @ValidateIf(isGiven) @IsNumber() @Min(0) @ExactPrice() cache_write_price_per_million?: number;
  @ValidateIf(isGiven) @IsNumber() @Min(0) @ExactPrice() cache_write_1h_price_per_million?: number;
  @ValidateIf(isGiven) @IsNumber() @Min(0) @ExactPrice() audio_input_price_per_million?: number;
  @ValidateIf(isGiven) @IsNumber() @Min(0) @ExactPrice() audio_output_price_per_million?: number;
}

/** A catalog entry's price sheet beyond its flat prices: variants, and the fees of the server tools the upstream runs. */
export class PriceSheetFields {
  @IsOptional() @ValidateNested({ each: true }) @Type(() => PriceVariant) @VariantList() price_variants?: PriceVariant[];
  /** USD per use of a server tool the upstream runs (`web_search: 0.01`); a tool not named here is withdrawn. */
  @IsOptional() @IsObject() @ToolFees() tool_fees?: Record<string, number>;
  /** Uses of each priced server tool a hold covers when the request sets no `max_uses`. */
  @IsInt() @Min(0) @Max(10_000) tool_hold_uses = 10;
}

function isGiven(_: object, value: unknown): boolean {
  return value !== undefined;
}

function ExactMultiplier(): PropertyDecorator {
  return ValidateBy({
    name: 'exactMultiplier',
    validator: {
      validate: (m: unknown) => typeof m !== 'number' || EXACT_MULTIPLIER.test(String(m)),
      defaultMessage: () => '$property must have at most 6 decimals and 6 integer digits',
    },
  });
}

function HasCondition(): PropertyDecorator {
  return ValidateBy({
    name: 'hasCondition',
    validator: {
      validate: (when: unknown) => typeof when === 'object' && when !== null && Object.values(when).some((v) => v !== undefined),
      defaultMessage: () => '$property must name at least one of service_tier, speed, inference_geo, prompt_tokens_over',
    },
  });
}

function VariantList(): PropertyDecorator {
  return ValidateBy({
    name: 'variantList',
    validator: {
      validate: (list: unknown) => Array.isArray(list) && list.length <= MAX_PRICE_VARIANTS && list.every(changesAPrice),
      defaultMessage: (args?: ValidationArguments) =>
        Array.isArray(args?.value) && args.value.length > MAX_PRICE_VARIANTS
          ? `$property may list at most ${MAX_PRICE_VARIANTS} variants`
          : '$property must be a list of variants, each with a multiplier or a price',
    },
  });
}

function changesAPrice(variant: unknown): boolean {
  return typeof variant === 'object' && variant !== null && Object.entries(variant).some(([k, v]) => k !== 'when' && v !== undefined);
}

function ToolFees(): PropertyDecorator {
  return ValidateBy({
    name: 'toolFees',
    validator: {
      validate: (fees: unknown) =>
        typeof fees === 'object' && fees !== null && !Array.isArray(fees) &&
        Object.entries(fees).every(([name, fee]) => TOOL_NAME.test(name) && typeof fee === 'number' && fee >= 0 && EXACT_PRICE.test(String(fee))),
      defaultMessage: () => '$property must map tool names (web_search) to USD per use, each a non-negative price with at most 6 decimals',
    },
  });
}
