import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength, Validate } from 'class-validator';
import { StorableText } from '../../common/validation/storable-text.validator';

export class AccountSearchQueryDto {
  @ApiPropertyOptional({ description: "Part of an account's name, or its whole id", maxLength: 200 })
  @IsOptional() @IsString() @MaxLength(200) @Validate(StorableText) q?: string;
}
