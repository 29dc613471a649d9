// class-transformer's @Type reads the design types: whoever loads a provider type's config class needs the metadata API.
import 'reflect-metadata';
import { Type } from 'class-transformer';
import { Allow, IsInt, Min, ValidateNested } from 'class-validator';

/**
 * What every provider type shares (docs/configuration.md, "providers.<name>"); the catalog's in gateway-config.schema.ts.
 * Each type's own config class is in its folder under src/providers/ (with the kinds it serves and its factory), and
 * reaches the loader from its caller (providers/provider-types.ts): configuration sits below the providers.
 */

/** OpenAI's current output-limit field, and the older one that reasoning models refuse but some servers alone know. */
export const OUTPUT_LIMIT_FIELDS = ['max_completion_tokens', 'max_tokens'] as const;
export type OutputLimitField = (typeof OUTPUT_LIMIT_FIELDS)[number];
export const MODEL_KINDS = ['chat', 'transcription', 'speech'] as const;
export type ModelKind = (typeof MODEL_KINDS)[number];
export const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];
/** The Content-Type the gateway answers for each speech format, whatever label the upstream put on it. */
export const SPEECH_CONTENT_TYPES: Record<SpeechFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

export class TimeoutsConfig {
  @IsInt() @Min(1) connect_ms = 2000;
  @IsInt() @Min(1) request_ms = 60000;
}

/** What every provider type's config has: its type and its timeouts. */
export class ProviderConfigBase {
  /** One of the types the loader is given: it checks this key itself, since only it knows them. */
  @Allow() type: string;

  @ValidateNested() @Type(() => TimeoutsConfig) timeouts: TimeoutsConfig = new TimeoutsConfig();
}

/** What the loader reads of a provider type: the class of its config (its keys), and the kinds of catalog model it serves. */
export interface ProviderConfigType {
  readonly config: new () => ProviderConfigBase;
  readonly kinds: readonly ModelKind[];
}

/** The provider types a configuration may use, by `type`. */
export type ProviderConfigTypes = Readonly<Record<string, ProviderConfigType>>;
