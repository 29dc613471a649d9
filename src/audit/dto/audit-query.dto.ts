import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsUUID, Validate, ValidationArguments, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { MAX_PAGE, PageLimit } from '../../common/validation/page-limit.validator';

const MAX_BIGINT = 9_223_372_036_854_775_807n;

/** An audit row's id: a positive bigint, in decimal. */
@ValidatorConstraint({ name: 'auditRowId' })
class AuditRowId implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && /^[1-9]\d{0,18}$/.test(value) && BigInt(value) <= MAX_BIGINT;
  }

  defaultMessage(args: ValidationArguments): string {
    return `${args.property} must be the id of an audit row (a positive whole number)`;
  }
}

/** A page of the admin audit, newest first: of one account or of all, after the row `before`. */
export class AuditQueryDto {
  @ApiPropertyOptional({ format: 'uuid', description: "Only this account's rows (its own actions and its keys')" })
  @IsOptional() @IsUUID('all', { message: 'account_id must be an account id (a UUID)' }) account_id?: string;

  @ApiPropertyOptional({ description: `Rows per page, 1 to ${MAX_PAGE}; default 50`, type: 'integer', minimum: 1, maximum: MAX_PAGE })
  @IsOptional() @Validate(PageLimit) limit?: string;

  @ApiPropertyOptional({ description: 'The id of the last row already shown: the page goes on with the rows older than it' })
  @IsOptional() @Validate(AuditRowId) before?: string;
}
