import { IsIn, IsNotEmpty, IsOptional, IsString, MaxLength, Validate, ValidateIf } from 'class-validator';
import { IsoDate } from './iso-date.validator';
import { StorableText } from './storable-text.validator';
import { UsdAmount } from './usd-amount.validator';

/** Longest account or key name, in UTF-16 units. */
export const MAX_NAME_LENGTH = 200;

export class CreateAccountDto {
  @IsString() @IsNotEmpty() @MaxLength(MAX_NAME_LENGTH) @Validate(StorableText) name: string;
}

export class CreateKeyDto {
  @IsOptional() @IsString() @MaxLength(MAX_NAME_LENGTH) @Validate(StorableText) name?: string;
}

export class AddCreditsDto {
  /** USD as a number or decimal string, at most 6 decimals, greater than zero. */
  @Validate(UsdAmount, [{ positive: true }]) amount_usd: number | string;
}

export class SpendingLimitDto {
  @ValidateIf((_, v) => v !== null) @Validate(UsdAmount, [{ positive: false }]) monthly_limit_usd: number | string | null;
}

export class SubscriptionDto {
  @IsIn(['trial', 'active', 'none']) status: 'trial' | 'active' | 'none';
  @IsOptional() @Validate(IsoDate) ends_at?: string;
}

export class UsageQueryDto {
  @IsOptional() @Validate(IsoDate) from?: string;
  @IsOptional() @Validate(IsoDate) to?: string;
}
