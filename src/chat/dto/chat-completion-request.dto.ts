import { Type } from 'class-transformer';
import { ArrayMinSize, IsArray, IsBoolean, IsInt, IsObject, IsOptional, IsString, Min, ValidateIf, ValidateNested } from 'class-validator';

export class ChatMessageDto {
  @IsString() role: string;
}

export class StreamOptionsDto {
  @IsOptional() @IsBoolean() include_usage?: boolean;
}

/**
 * The fields of a chat request the gateway itself relies on (routing, billing, streaming). Every other
 * field is passed to the upstream untouched, so the body is validated, never rebuilt from this class.
 */
export class ChatCompletionRequestDto {
  @IsString() model: string;

  @IsArray() @ArrayMinSize(1) @ValidateNested({ each: true }) @Type(() => ChatMessageDto)
  messages: ChatMessageDto[];

  @IsOptional() @IsBoolean() stream?: boolean;

  @ValidateIf((_, v) => v !== undefined && v !== null) @IsObject() @ValidateNested() @Type(() => StreamOptionsDto)
  stream_options?: StreamOptionsDto | null;

  @ValidateIf((_, v) => v !== undefined && v !== null) @IsInt() @Min(1) max_tokens?: number | null;
  @ValidateIf((_, v) => v !== undefined && v !== null) @IsInt() @Min(1) max_completion_tokens?: number | null;
  /** Choices per request: the hold covers every one of them. */
  @ValidateIf((_, v) => v !== undefined && v !== null) @IsInt() @Min(1) n?: number | null;
}
