import { ValidationArguments, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { isStorableText } from '../storable-text';

/** A string without NUL or lone surrogates (src/common/storable-text): stored and logged as sent. */
@ValidatorConstraint({ name: 'storableText' })
export class StorableText implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && isStorableText(value);
  }

  defaultMessage(args: ValidationArguments): string {
    return `${args.property} must be text without NUL characters or unpaired UTF-16 surrogates`;
  }
}
