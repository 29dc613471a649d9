import { ValidationArguments, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { ISO_DATE_DESCRIPTION, parseIsoDate } from '../iso-date';

/** A date in the API's one format (src/common/iso-date): what `new Date` and PostgreSQL both read the same way. */
@ValidatorConstraint({ name: 'isoDate' })
export class IsoDate implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && parseIsoDate(value) !== null;
  }

  defaultMessage(args: ValidationArguments): string {
    return `${args.property} must be ${ISO_DATE_DESCRIPTION}`;
  }
}
