import { IsIn, IsOptional, IsString } from 'class-validator';

export const TRANSCRIPTION_RESPONSE_FORMATS = ['json', 'text', 'verbose_json'] as const;
export type TranscriptionResponseFormat = (typeof TRANSCRIPTION_RESPONSE_FORMATS)[number];
/** The formats whose text can be streamed (OpenAI streams json and text; verbose_json's segments come whole). */
export const STREAMED_RESPONSE_FORMATS: readonly TranscriptionResponseFormat[] = ['json', 'text'];

/** The text fields of the multipart form; `model` is accepted and ignored (the active model serves). */
export class TranscriptionFormDto {
  @IsOptional() @IsString() model?: string;
  @IsOptional() @IsIn(TRANSCRIPTION_RESPONSE_FORMATS) response_format?: TranscriptionResponseFormat;
  @IsOptional() @IsString() language?: string;
  @IsOptional() @IsString() prompt?: string;
  @IsOptional() @IsString() temperature?: string;
  /** `true` streams the text as OpenAI's transcription events (json and text formats); checked by the pipe. */
  @IsOptional() @IsString() stream?: string;
}
