import { plainToInstance } from 'class-transformer';
import { validateSync, ValidationError } from 'class-validator';
import { ErrorCode, GatewayError } from '../../errors';
import { constraintMessage } from './constraint-message';

/**
 * The DTO `type` built from `part` (plain scalars: see scalarFields) and checked; a 400 naming the
 * first field at fault otherwise (`Invalid max_tokens: …`, param `max_tokens`).
 */
export function validatedDto<T extends object>(type: new () => T, part: Record<string, unknown>): T {
  const dto = plainToInstance(type, part);
  const [problem] = validateSync(dto, { forbidUnknownValues: false });
  if (problem) {
    const { path, message } = firstConstraint(problem);
    throw new GatewayError(ErrorCode.InvalidRequest, `Invalid ${path}: ${message}.`, path);
  }
  return dto;
}

function firstConstraint(error: ValidationError, parent = ''): { path: string; message: string } {
  const path = parent ? `${parent}${/^\d+$/.test(error.property) ? `[${error.property}]` : `.${error.property}`}` : error.property;
  if (error.constraints) return { path, message: constraintMessage(error.constraints) };
  return error.children?.length ? firstConstraint(error.children[0], path) : { path, message: 'invalid value' };
}
