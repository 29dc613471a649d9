import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Matches, Validate, ValidationArguments, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { UsageQueryDto } from '../../usage/dto/usage-query.dto';

/** Largest page of requests the dashboard may ask for at once. */
const MAX_REQUESTS_PAGE = 200;

@ValidatorConstraint({ name: 'pageLimit' })
class PageLimit implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && /^[1-9]\d{0,2}$/.test(value) && Number(value) <= MAX_REQUESTS_PAGE;
  }

  defaultMessage(args: ValidationArguments): string {
    return `${args.property} must be a whole number from 1 to ${MAX_REQUESTS_PAGE}`;
  }
}

/** A page of an account's requests in a period: `after` is the request id of the last row already shown. */
export class LatestRequestsQueryDto extends UsageQueryDto {
  // The gateway's ids are req_ and hex: anything else, or longer, is refused before any look-up.
  @ApiPropertyOptional({ description: "The request id of the last row already shown (one of this account's requests)", maxLength: 64 })
  @IsOptional() @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'after must be a request id (req_…)' }) after?: string;

  @ApiPropertyOptional({ description: `Rows per page, 1 to ${MAX_REQUESTS_PAGE}; default 50`, type: 'integer', minimum: 1, maximum: MAX_REQUESTS_PAGE })
  @IsOptional() @Validate(PageLimit) limit?: string;
}
