import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsArray, IsIn, IsInt, IsNotEmpty, IsOptional, IsString, Max, MaxLength, Min, Validate, ValidateIf } from 'class-validator';
import { IsoDate } from '../../common/validation/iso-date.validator';
import { StorableText } from '../../common/validation/storable-text.validator';
import { UsdAmount } from './usd-amount.validator';
import { MAX_RATE_LIMIT } from '../../config/rate-limits.schema';

/** Longest account or key name, in UTF-16 units. */
export const MAX_NAME_LENGTH = 200;

const RPM = { type: 'integer' as const, minimum: 1, maximum: MAX_RATE_LIMIT, nullable: true, description: 'Requests per minute; null: the config default (rate_limits)' };
const TPM = { type: 'integer' as const, minimum: 1, maximum: MAX_RATE_LIMIT, nullable: true, description: 'Tokens per minute (prompt estimate plus output limit at admission, trued up to the upstream count); null: the config default' };
const USD_AMOUNT = { oneOf: [{ type: 'number' }, { type: 'string', pattern: '^\\d+(\\.\\d{1,6})?$' }], description: 'USD, at most 6 decimals' };

export class CreateAccountDto {
  @ApiProperty({ maxLength: MAX_NAME_LENGTH })
  @IsString() @IsNotEmpty() @MaxLength(MAX_NAME_LENGTH) @Validate(StorableText) name: string;
}

/** Longest grace period of a rotation: one day. */
export const MAX_GRACE_S = 86_400;

/**
 * A key's controls (DESIGN.md section 10), at creation and in a PATCH (which changes only the fields it
 * names; null clears one). `models` is checked here as an array only: its ids against the catalog by the
 * admin service, which reads the body's own array (the validation pipe hands DTOs arrays emptied).
 */
export class CreateKeyDto {
  @ApiPropertyOptional({ maxLength: MAX_NAME_LENGTH, nullable: true })
  @IsOptional() @IsString() @MaxLength(MAX_NAME_LENGTH) @Validate(StorableText) name?: string | null;
  @ApiPropertyOptional({ ...USD_AMOUNT, nullable: true, description: 'Monthly limit of the key (UTC calendar month), USD, at most 6 decimals; null: none' })
  @IsOptional() @Validate(UsdAmount, [{ positive: false }]) monthly_limit_usd?: number | string | null;
  @ApiPropertyOptional({ format: 'date-time', nullable: true, description: 'When the key stops working (YYYY-MM-DD, or RFC 3339 with Z or ±HH:MM); null: never' })
  @IsOptional() @Validate(IsoDate) expires_at?: string | null;
  @ApiPropertyOptional({ type: 'array', items: { type: 'string' }, minItems: 1, nullable: true, description: 'Catalog ids the key may use for chat, Responses and speech; null: all' })
  @IsOptional() @IsArray() models?: string[] | null;
  @ApiPropertyOptional(RPM)
  @IsOptional() @IsInt() @Min(1) @Max(MAX_RATE_LIMIT) rpm?: number | null;
  @ApiPropertyOptional(TPM)
  @IsOptional() @IsInt() @Min(1) @Max(MAX_RATE_LIMIT) tpm?: number | null;
}

/**
 * An account's own rate limits and low-credits threshold (DESIGN.md 12.4); a PATCH changes only the fields it names,
 * null clears one (a rate limit back to the default, the threshold to none).
 */
export class UpdateAccountDto {
  @ApiPropertyOptional({ ...USD_AMOUNT, nullable: true, description: 'credits.low webhook when credits go below this, USD, at most 6 decimals; null: none' })
  @IsOptional() @Validate(UsdAmount, [{ positive: false }]) low_credits_usd?: number | string | null;
  @ApiPropertyOptional(RPM)
  @IsOptional() @IsInt() @Min(1) @Max(MAX_RATE_LIMIT) rpm?: number | null;
  @ApiPropertyOptional(TPM)
  @IsOptional() @IsInt() @Min(1) @Max(MAX_RATE_LIMIT) tpm?: number | null;
}

export class UpdateKeyDto extends CreateKeyDto {}

export class RotateKeyDto {
  @ApiPropertyOptional({ minimum: 0, maximum: MAX_GRACE_S, default: 0, description: 'Seconds the old key keeps working' })
  @ValidateIf((_, v) => v !== undefined) @IsInt() @Min(0) @Max(MAX_GRACE_S) grace_s?: number;
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
