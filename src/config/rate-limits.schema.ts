import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min, ValidateNested } from 'class-validator';

/** The largest rpm or tpm: what a PostgreSQL `integer` column holds (the per-account and per-key values are stored so). */
export const MAX_RATE_LIMIT = 2_147_483_647;

/** Requests and tokens per minute; an absent one is no limit (DESIGN.md 12.4). */
export class RateLimitPair {
  @IsOptional() @IsInt() @Min(1) @Max(MAX_RATE_LIMIT) rpm?: number;
  @IsOptional() @IsInt() @Min(1) @Max(MAX_RATE_LIMIT) tpm?: number;
}

/**
 * `rate_limits`: the defaults of every account and every key, each overridden per account or key through the admin
 * API (docs/configuration.md, "rate_limits"). Absent: none.
 */
export class RateLimitsConfig {
  @IsOptional() @ValidateNested() @Type(() => RateLimitPair) accounts?: RateLimitPair;
  @IsOptional() @ValidateNested() @Type(() => RateLimitPair) keys?: RateLimitPair;
}
