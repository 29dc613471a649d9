import { SetMetadata } from '@nestjs/common';

export const ACCEPTS_X_API_KEY = 'gateway:acceptsXApiKey';

/**
 * The route also takes its API key in an `x-api-key` header, as Anthropic's SDKs send it (Claude Code
 * with an auth token sends `Authorization: Bearer` instead): the same key check, the same 401.
 */
export const AcceptsXApiKey = () => SetMetadata(ACCEPTS_X_API_KEY, true);
