import { IsBoolean, IsInt, IsNumber, IsObject, IsOptional, IsString, Max, Min, ValidateIf } from 'class-validator';
import { FINITE, MAX_TOKENS_LIMIT, present } from '../../chat/dto/chat-completion-request.dto';

/**
 * The scalar fields of a Responses request, with OpenAI's documented ranges (the same as chat's for the
 * shared ones). Input items, tools and formats are checked while they are translated (responses-input.ts,
 * responses-tools.ts); the fields that need server state are refused before (responses-refusals.ts).
 */
export class ResponsesRequestDto {
  @IsString() model: string;
  @IsOptional() @IsBoolean() stream?: boolean;
  @ValidateIf(present) @IsString() instructions?: string | null;
  /** Plays the part of chat's max_tokens: the hold covers it, and the upstream gets it as max_tokens. */
  @ValidateIf(present) @IsInt() @Min(1) @Max(MAX_TOKENS_LIMIT) max_output_tokens?: number | null;
  @ValidateIf(present) @IsNumber(FINITE) @Min(0) @Max(2) temperature?: number | null;
  @ValidateIf(present) @IsNumber(FINITE) @Min(0) @Max(1) top_p?: number | null;
  @ValidateIf(present) @IsBoolean() parallel_tool_calls?: boolean | null;
  @ValidateIf(present) @IsString() user?: string | null;
  @ValidateIf(present) @IsObject() metadata?: Record<string, unknown> | null;
  @ValidateIf(present) @IsObject() text?: Record<string, unknown> | null;
  @ValidateIf(present) @IsObject() reasoning?: Record<string, unknown> | null;
}

export const VALIDATED_RESPONSES_FIELDS = [
  'model',
  'stream',
  'instructions',
  'max_output_tokens',
  'temperature',
  'top_p',
  'parallel_tool_calls',
  'user',
  'metadata',
  'text',
  'reasoning',
] as const;
