import { ArgumentMetadata, Injectable, Type, ValidationError, ValidationPipe } from '@nestjs/common';
import { getMetadataStorage } from 'class-validator';
import { ErrorCode, GatewayError } from '../../errors';
import { scalarFields } from '../json/scalar-fields';

/**
 * The one validation of every route parameter typed with a class-validator DTO (registered as APP_PIPE);
 * any other parameter (chat's and speech's bodies, which their own pipes check, the transcription upload,
 * ids, the usage meter) passes untouched at the cost of one map look-up. The DTOs hold scalars only: a
 * body must be a JSON object (`null`, arrays, strings and numbers are refused before any DTO work),
 * unknown fields are refused (prototype names such as `constructor` or `__proto__` too), and the 400
 * names the first field at fault in `param`. Unknown fields are found in one pass over the keys, and only
 * the DTO's own fields, with any object or array in them emptied, reach class-transformer, whose copy of
 * an object costs time quadratic in its keys (a 99,000-key admin body took 4–9 s).
 */
@Injectable()
export class StrictValidationPipe extends ValidationPipe {
  private readonly fieldsOf = new Map<Type, string[]>();

  constructor() {
    super({ whitelist: true, forbidNonWhitelisted: true, exceptionFactory: firstProblem });
  }

  override transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const fields = metadata.metatype ? this.fields(metadata.metatype) : [];
    if (fields.length === 0) return Promise.resolve(value);
    if (metadata.type === 'body' && (typeof value !== 'object' || value === null || Array.isArray(value))) {
      throw new GatewayError(ErrorCode.InvalidRequest, 'The request body must be a JSON object.');
    }
    if ((metadata.type !== 'body' && metadata.type !== 'query') || typeof value !== 'object' || value === null) {
      return super.transform(value, metadata);
    }
    const source = value as Record<string, unknown>;
    for (const key of Object.keys(source)) {
      if (!fields.includes(key)) throw new GatewayError(ErrorCode.InvalidRequest, `property ${key} should not exist.`, key);
    }
    return super.transform(scalarFields(source, fields), metadata);
  }

  /** The fields a DTO class validates (none for a type without class-validator metadata). */
  private fields(metatype: Type): string[] {
    let fields = this.fieldsOf.get(metatype);
    if (!fields) {
      fields = [...new Set(getMetadataStorage().getTargetValidationMetadatas(metatype, '', true, false).map((m) => m.propertyName))];
      this.fieldsOf.set(metatype, fields);
    }
    return fields;
  }
}

function firstProblem(errors: ValidationError[]): GatewayError {
  const [first] = errors;
  const message = first?.constraints ? Object.values(first.constraints)[0] : 'invalid value';
  return new GatewayError(ErrorCode.InvalidRequest, `${message}.`, first?.property ?? null);
}
