import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

export class DeliveriesQueryDto {
  @ApiPropertyOptional({ minimum: 1, maximum: 500, default: 50, description: 'How many, newest first' })
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(500) limit?: number;
  @ApiPropertyOptional({ enum: DELIVERY_STATUSES, description: 'Only these (failed: given up after webhook_delivery.retry_for_s)' })
  @IsOptional() @IsIn(DELIVERY_STATUSES) status?: (typeof DELIVERY_STATUSES)[number];
}
