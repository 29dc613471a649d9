import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { ErrorCode, GatewayError } from '../common/errors';

/**
 * Validation of the admin and dashboard APIs (and /v1/usage's query): a body must be a JSON object
 * (`null`, arrays, strings and numbers are refused before any DTO work), unknown fields are refused,
 * and the 400 names the first field at fault in `param`.
 */
@Injectable()
export class AdminValidationPipe extends ValidationPipe {
  constructor() {
    super({ whitelist: true, forbidNonWhitelisted: true, exceptionFactory: firstProblem });
  }

  override transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'body' && (typeof value !== 'object' || value === null || Array.isArray(value))) {
      throw new GatewayError(ErrorCode.InvalidRequest, 'The request body must be a JSON object.');
    }
    return super.transform(value, metadata);
  }
}

function firstProblem(errors: ValidationError[]): GatewayError {
  const [first] = errors;
  const message = first?.constraints ? Object.values(first.constraints)[0] : 'invalid value';
  return new GatewayError(ErrorCode.InvalidRequest, `${message}.`, first?.property ?? null);
}
