import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsUUID, Matches, MaxLength, MinLength, Validate, ValidationArguments, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { MAX_PAGE, PageLimit } from '../../common/validation/page-limit.validator';
import { StorableText } from '../../common/validation/storable-text.validator';
import { UsageQueryDto } from '../../usage/dto/usage-query.dto';
import { NO_MODEL } from '../../usage/latest-requests';

/**
 * A page of an account's requests in a period: `after` is the request id of the last row already shown. The filters
 * narrow the rows and keep paging: the next page passes the same filters with `after` (docs/operations.md, "Latest requests").
 */
export class LatestRequestsQueryDto extends UsageQueryDto {
  // The gateway's ids are req_ and hex: anything else, or longer, is refused before any look-up.
  @ApiPropertyOptional({ description: "The request id of the last row already shown (one of this account's requests)", maxLength: 64 })
  @IsOptional() @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'after must be a request id (req_…)' }) after?: string;

  @ApiPropertyOptional({ description: `Rows per page, 1 to ${MAX_PAGE}; default 50`, type: 'integer', minimum: 1, maximum: MAX_PAGE })
  @IsOptional() @Validate(PageLimit) limit?: string;

  @ApiPropertyOptional({ description: 'One HTTP status (429), a class of them (2xx, 4xx, 5xx), or failed (400 and above)', example: '4xx' })
  @IsOptional() @Matches(/^(?:[1-5]\d\d|[1-5]xx|failed)$/, { message: 'status must be a status (429), a class (2xx, 4xx, 5xx) or failed' }) status?: string;

  @ApiPropertyOptional({ description: 'An error code (rate_limit_exceeded): only the requests that failed with it', maxLength: 64 })
  @IsOptional() @Matches(/^[a-z0-9_]{1,64}$/, { message: 'code must be an error code (lower case letters, digits and _)' }) code?: string;

  @ApiPropertyOptional({ description: "One of the account's keys (its id): only its requests", format: 'uuid' })
  @IsOptional() @IsUUID('all', { message: 'key_id must be a key id (a UUID)' }) key_id?: string;

  @ApiPropertyOptional({ description: `The model as recorded, exactly; ${NO_MODEL}: the requests recorded without one`, maxLength: 200 })
  @IsOptional() @MinLength(1, { message: 'model must not be empty' }) @MaxLength(200, { message: 'model must be at most 200 characters' }) @Validate(StorableText) model?: string;

  // Routed endpoints are the app's few paths ("/v1/models/{id}"); a path no route matched is recorded as sent, bounded to 128.
  @ApiPropertyOptional({ description: 'The endpoint as recorded, exactly (/v1/chat/completions)', maxLength: 128 })
  @IsOptional() @Matches(/^\/[\x21-\x7e]{0,127}$/, { message: 'endpoint must be an endpoint path (/v1/chat/completions)' }) endpoint?: string;

  @ApiPropertyOptional({ description: 'true: only streamed requests; false: only the others', enum: ['true', 'false'] })
  @IsOptional() @IsIn(['true', 'false'], { message: 'streamed must be true or false' }) streamed?: string;

  @ApiPropertyOptional({ description: 'A request id, or its first 6 characters or more (x-request-id)', minLength: 6, maxLength: 64 })
  @IsOptional() @Matches(/^[A-Za-z0-9_-]{6,64}$/, { message: 'request_id must be a request id or its first 6 characters or more' }) request_id?: string;
}
