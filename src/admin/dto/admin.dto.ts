import { IsDateString, IsIn, IsNotEmpty, IsOptional, IsString, Matches, MaxLength, Validate, ValidateIf } from 'class-validator';
import { UsdAmount } from './usd-amount.validator';

/** PostgreSQL text cannot hold NUL; refusing it here keeps such a name a 400 rather than a failed insert. */
const NO_NUL = /^[^\u0000]*$/;
const NO_NUL_MESSAGE = { message: '$property must not contain NUL characters' };

export class CreateAccountDto {
  @IsString() @IsNotEmpty() @MaxLength(200) @Matches(NO_NUL, NO_NUL_MESSAGE) name: string;
}

export class CreateKeyDto {
  @IsOptional() @IsString() @MaxLength(200) @Matches(NO_NUL, NO_NUL_MESSAGE) name?: string;
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
  @IsOptional() @IsDateString({ strict: true }) ends_at?: string;
}

export class UsageQueryDto {
  @IsOptional() @IsDateString({ strict: true }) from?: string;
  @IsOptional() @IsDateString({ strict: true }) to?: string;
}
