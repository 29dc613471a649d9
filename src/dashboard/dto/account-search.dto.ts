import { IsOptional, IsString, MaxLength, Validate } from 'class-validator';
import { StorableText } from '../../admin/dto/storable-text.validator';

export class AccountSearchQueryDto {
  /** Part of an account's name, or its whole id. */
  @IsOptional() @IsString() @MaxLength(200) @Validate(StorableText) q?: string;
}
