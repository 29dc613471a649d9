import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsNotEmpty, IsOptional, IsString, MaxLength, Validate, ValidateIf } from 'class-validator';
import { IsoDate } from '../../common/validation/iso-date.validator';
import { StorableText } from '../../common/validation/storable-text.validator';
import { UsdAmount } from './usd-amount.validator';

/** Longest account or key name, in UTF-16 units. */
export const MAX_NAME_LENGTH = 200;

const USD_AMOUNT = { oneOf: [{ type: 'number' }, { type: 'string', pattern: '^\\d+(\\.\\d{1,6})?$' }], description: 'USD, at most 6 decimals' };

export class CreateAccountDto {
  @ApiProperty({ maxLength: MAX_NAME_LENGTH })
  @IsString() @IsNotEmpty() @MaxLength(MAX_NAME_LENGTH) @Validate(StorableText) name: string;
}

export class CreateKeyDto {
  @ApiPropertyOptional({ maxLength: MAX_NAME_LENGTH })
  @IsOptional() @IsString() @MaxLength(MAX_NAME_LENGTH) @Validate(StorableText) name?: string;
}

export class AddCreditsDto {
  /** USD as a number or decimal string, at most 6 decimals, greater than zero. */
  @ApiProperty(USD_AMOUNT)
  @Validate(UsdAmount, [{ positive: true }]) amount_usd: number | string;
}

export class SpendingLimitDto {
  @ApiProperty({ ...USD_AMOUNT, nullable: true, description: 'USD, at most 6 decimals; null removes the limit' })
  @ValidateIf((_, v) => v !== null) @Validate(UsdAmount, [{ positive: false }]) monthly_limit_usd: number | string | null;
}

export class SubscriptionDto {
  @ApiProperty({ enum: ['trial', 'active', 'none'] })
  @IsIn(['trial', 'active', 'none']) status: 'trial' | 'active' | 'none';
  @ApiPropertyOptional({ format: 'date-time', description: 'When it ends (YYYY-MM-DD, or RFC 3339 with Z or ±HH:MM)' })
  @IsOptional() @Validate(IsoDate) ends_at?: string;
}
