import { SetMetadata } from '@nestjs/common';
import { ErrorCode } from '../../errors';

export const INVALID_BODY_CODE = 'gateway:invalidBodyCode';
/** The code a route answers when its body is not parseable JSON (chat: invalid_json; speech: invalid_request_error). */
export const InvalidBodyCode = (code: ErrorCode) => SetMetadata(INVALID_BODY_CODE, code);
