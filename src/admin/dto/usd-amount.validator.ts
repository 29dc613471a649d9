import { ValidationArguments, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { usdToMicros } from '../../common/money';

@ValidatorConstraint({ name: 'usdAmount' })
export class UsdAmount implements ValidatorConstraintInterface {
  validate(value: unknown, args: ValidationArguments): boolean {
    if (typeof value !== 'number' && typeof value !== 'string') return false;
    const micros = usdToMicros(value);
    const [{ positive }] = args.constraints as [{ positive: boolean }];
    return micros !== null && (!positive || micros > 0n);
  }

  defaultMessage(args: ValidationArguments): string {
    const [{ positive }] = args.constraints as [{ positive: boolean }];
    return `${args.property} must be a ${positive ? 'positive' : 'non-negative'} USD amount with at most 6 decimals`;
  }
}
