import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { UsageQueryDto } from '../usage/dto/usage-query.dto';

/** A statement's period (as usage's: `from` inclusive, `to` exclusive) and its format. */
export class StatementQueryDto extends UsageQueryDto {
  @ApiPropertyOptional({ enum: ['json', 'csv'], description: 'csv, or json (the default unless Accept asks for text/csv)' })
  @IsOptional() @IsIn(['json', 'csv']) format?: 'json' | 'csv';
}
