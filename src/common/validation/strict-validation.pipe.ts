import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { ErrorCode, GatewayError } from '../common/errors';

// Keys that name prototype machinery: class-transformer drops some of them silently, so they are refused here.
const PROTOTYPE_NAMES = new Set(['__proto__', 'prototype', ...Object.getOwnPropertyNames(Object.prototype)]);

/**
 * Validation of the admin and dashboard APIs (and /v1/usage's query): a body must be a JSON object
 * (`null`, arrays, strings and numbers are refused before any DTO work), unknown fields are refused
 * (prototype names such as `constructor` or `__proto__` too), and the 400 names the first field at fault in `param`.
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
    if ((metadata.type === 'body' || metadata.type === 'query') && typeof value === 'object' && value !== null) {
      const prototypeName = Object.keys(value).find((key) => PROTOTYPE_NAMES.has(key));
      if (prototypeName !== undefined) {
        throw new GatewayError(ErrorCode.InvalidRequest, `property ${prototypeName} should not exist.`, prototypeName);
      }
    }
    return super.transform(value, metadata);
  }
}

function firstProblem(errors: ValidationError[]): GatewayError {
  const [first] = errors;
  const message = first?.constraints ? Object.values(first.constraints)[0] : 'invalid value';
  return new GatewayError(ErrorCode.InvalidRequest, `${message}.`, first?.property ?? null);
}
