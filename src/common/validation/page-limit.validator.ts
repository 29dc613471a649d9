import { ValidationArguments, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';

/** Largest page a listing answers at once (the dashboard's requests, the admin audit). */
export const MAX_PAGE = 200;

/** A page's `limit` query parameter: a whole number from 1 to MAX_PAGE, as written (no sign, no leading zero). */
@ValidatorConstraint({ name: 'pageLimit' })
export class PageLimit implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && /^[1-9]\d{0,2}$/.test(value) && Number(value) <= MAX_PAGE;
  }

  defaultMessage(args: ValidationArguments): string {
    return `${args.property} must be a whole number from 1 to ${MAX_PAGE}`;
  }
}
