import { IsIn, IsNotEmpty, IsNumber, IsOptional, IsString, Max, Min } from 'class-validator';
import { SPEECH_FORMATS, SpeechFormat } from '../../config/gateway-config.schema';

export const MIN_SPEED = 0.25;
export const MAX_SPEED = 4;

/**
 * The speech request's fields, type-checked; which voices and formats a model offers and how long the
 * input may be are checked against the catalog entry and the limits afterwards.
 */
export class SpeechRequestDto {
  @IsString() model: string;
  @IsString() @IsNotEmpty() input: string;
  @IsOptional() @IsString() @IsNotEmpty() voice?: string;
  @IsOptional() @IsIn(SPEECH_FORMATS) response_format?: SpeechFormat;
  @IsOptional() @IsNumber({ allowNaN: false, allowInfinity: false }) @Min(MIN_SPEED) @Max(MAX_SPEED) speed?: number;
}

/** The body fields the DTO checks; any other field is ignored. */
export const SPEECH_FIELDS = ['model', 'input', 'voice', 'response_format', 'speed'] as const;
