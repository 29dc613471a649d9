import { Type } from 'class-transformer';
import {
  IsBoolean,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Max,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';

/** Token counts end in `integer` columns (usage_records) and parameters (billing_reserve's p_max_output). */
export const MAX_TOKENS_LIMIT = 2_147_483_647;
/** Choices per request, as OpenAI's API allows. */
export const MAX_CHOICES = 128;

/** OpenAI's `null` means "the default", as if the field were absent. */
export const present = (_: object, value: unknown) => value !== undefined && value !== null;
export const FINITE = { allowNaN: false, allowInfinity: false };

export class StreamOptionsDto {
  @IsOptional() @IsBoolean() include_usage?: boolean;
}

/**
 * The fields of a chat request the gateway itself relies on (routing, billing, streaming), and the
 * sampling parameters with OpenAI's documented ranges. Every other field is passed to the upstream
 * untouched, so the body is validated, never rebuilt from this class. `messages` is checked by the
 * pipe in a plain loop: a DTO object per message costs too much for a long conversation.
 */
export class ChatCompletionRequestDto {
  @IsString() model: string;

  @IsOptional() @IsBoolean() stream?: boolean;

  @ValidateIf(present) @IsObject() @ValidateNested() @Type(() => StreamOptionsDto)
  stream_options?: StreamOptionsDto | null;

  @ValidateIf(present) @IsInt() @Min(1) @Max(MAX_TOKENS_LIMIT) max_tokens?: number | null;
  @ValidateIf(present) @IsInt() @Min(1) @Max(MAX_TOKENS_LIMIT) max_completion_tokens?: number | null;
  /** Choices per request: the hold covers every one of them. */
  @ValidateIf(present) @IsInt() @Min(1) @Max(MAX_CHOICES) n?: number | null;

  @ValidateIf(present) @IsNumber(FINITE) @Min(0) @Max(2) temperature?: number | null;
  @ValidateIf(present) @IsNumber(FINITE) @Min(0) @Max(1) top_p?: number | null;
  @ValidateIf(present) @IsNumber(FINITE) @Min(-2) @Max(2) presence_penalty?: number | null;
  @ValidateIf(present) @IsNumber(FINITE) @Min(-2) @Max(2) frequency_penalty?: number | null;
  @ValidateIf(present) @IsBoolean() logprobs?: boolean | null;
  @ValidateIf(present) @IsInt() @Min(0) @Max(20) top_logprobs?: number | null;
  /** Beyond 2^53 a JSON number is no longer the integer the client wrote, so it could not be passed on as sent. */
  @ValidateIf(present) @IsInt() @Min(Number.MIN_SAFE_INTEGER) @Max(Number.MAX_SAFE_INTEGER) seed?: number | null;
}

/** The body fields the DTO checks; the rest passes through unread. */
export const VALIDATED_CHAT_FIELDS = [
  'model',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'temperature',
  'top_p',
  'presence_penalty',
  'frequency_penalty',
  'logprobs',
  'top_logprobs',
  'seed',
] as const;
