import { IsBoolean, IsInt, IsNumber, IsOptional, IsString, Max, Min, ValidateIf } from 'class-validator';
import { FINITE, MAX_TOKENS_LIMIT, present } from '../../chat/dto/chat-completion-request.dto';

/**
 * The scalar fields of a Messages request, with Anthropic's documented ranges. Messages, system blocks,
 * tools and metadata are checked while they are translated (messages-input.ts, messages-tools.ts); the
 * fields that need Anthropic's own platform are refused before (messages-refusals.ts).
 */
export class MessagesRequestDto {
  @IsString() model: string;
  /** Required by Anthropic's API: the hold covers it, and the upstream gets it as max_tokens. */
  @IsInt() @Min(1) @Max(MAX_TOKENS_LIMIT) max_tokens: number;
  @IsOptional() @IsBoolean() stream?: boolean;
  @ValidateIf(present) @IsNumber(FINITE) @Min(0) @Max(1) temperature?: number | null;
  @ValidateIf(present) @IsNumber(FINITE) @Min(0) @Max(1) top_p?: number | null;
  /** Validated and not forwarded: chat completions have no top_k. */
  @ValidateIf(present) @IsInt() @Min(0) @Max(MAX_TOKENS_LIMIT) top_k?: number | null;
}

/** count_tokens takes the same body without max_tokens (and nothing is generated, so no sampling fields matter). */
export class CountTokensRequestDto {
  @IsString() model: string;
}

export const VALIDATED_MESSAGES_FIELDS = ['model', 'max_tokens', 'stream', 'temperature', 'top_p', 'top_k'] as const;

/** Anthropic's own error for a missing max_tokens names the field: so does ours (before the DTO's generic wording). */
export const MAX_TOKENS_REQUIRED = 'max_tokens is required: the most tokens the answer may have (an integer of at least 1).';
