import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Validate } from 'class-validator';
import { IsoDate } from '../../common/validation/iso-date.validator';
import { usagePeriodDescriptions } from '../../openapi/response-schemas';

/** The period of a usage summary (src/usage/usage-period.ts): `from` inclusive, `to` exclusive. */
export class UsageQueryDto {
  @ApiPropertyOptional({ description: usagePeriodDescriptions.from })
  @IsOptional() @Validate(IsoDate) from?: string;

  @ApiPropertyOptional({ description: usagePeriodDescriptions.to })
  @IsOptional() @Validate(IsoDate) to?: string;
}
