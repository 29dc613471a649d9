import { IsOptional, IsString, MaxLength } from 'class-validator';

export class AccountSearchQueryDto {
  /** Part of an account's name, or its whole id. */
  @IsOptional() @IsString() @MaxLength(200) q?: string;
}
