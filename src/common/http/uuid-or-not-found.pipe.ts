import { Injectable, PipeTransform } from '@nestjs/common';
import { isUUID } from 'class-validator';
import { ErrorCode, GatewayError } from '../../errors';

/** An id that cannot exist is an unknown resource: 404 not_found, not a validation error. */
@Injectable()
export class UuidOrNotFoundPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!isUUID(value)) throw new GatewayError(ErrorCode.NotFound, `No resource with id ${value}.`);
    return value;
  }
}
