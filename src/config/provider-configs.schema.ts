import { Type } from 'class-transformer';
import {
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';

/** The providers' types and each type's config (docs/configuration.md, "providers.<name>"); the catalog's in gateway-config.schema.ts. */

export const PROVIDER_TYPES = ['openai-compatible', 'anthropic', 'gemini', 'bedrock', 'azure-openai', 'local'] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];
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
  @IsIn(PROVIDER_TYPES) type: ProviderType;

  @ValidateNested() @Type(() => TimeoutsConfig) timeouts: TimeoutsConfig = new TimeoutsConfig();
}

/** Any server speaking OpenAI's API, over HTTP with a bearer key. */
export class OpenAiCompatibleProviderConfig extends ProviderConfigBase {
  /** The kinds of catalog model this type serves (checked at start against each entry's `kind`). */
  static kinds: readonly ModelKind[] = ['chat', 'transcription', 'speech'];
  declare type: 'openai-compatible';

  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  base_url: string;

  @IsOptional() @IsString() @Matches(/^[A-Za-z_][A-Za-z0-9_]*$/) api_key_env?: string;

  /** Connections kept alive per upstream origin. */
  @IsInt() @Min(1) max_connections = 256;

  /**
   * The one field this server takes an output limit in: every limit is sent in it, whichever field the client
   * or the gateway wrote. Unset: the client's own field, and max_completion_tokens for the gateway's own limits
   * (docs/configuration.md, "Output limits").
   */
  @ValidateIf((p: OpenAiCompatibleProviderConfig) => p.output_limit_field !== undefined)
  @IsIn(OUTPUT_LIMIT_FIELDS)
  output_limit_field?: OutputLimitField;
}

/** Anthropic's Messages API (DESIGN.md section 11): `x-api-key` with `anthropic-version`; chat models only. */
export class AnthropicProviderConfig extends ProviderConfigBase {
  static kinds: readonly ModelKind[] = ['chat'];
  declare type: 'anthropic';

  /** Without /v1: `https://api.anthropic.com`. */
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  base_url: string;

  @IsOptional() @IsString() @Matches(/^[A-Za-z_][A-Za-z0-9_]*$/) api_key_env?: string;

  @IsInt() @Min(1) max_connections = 256;
}

/**
 * Azure OpenAI (DESIGN.md section 11): OpenAI's bodies at `/openai/deployments/{upstream_model}/…?api-version=`,
 * with an `api-key` header. One api_version per provider: a deployment that needs another is a second provider.
 */
export class AzureOpenAiProviderConfig extends ProviderConfigBase {
  static kinds: readonly ModelKind[] = ['chat', 'transcription', 'speech'];
  declare type: 'azure-openai';

  /** The resource's endpoint, without /openai: `https://my-resource.openai.azure.com`. */
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  base_url: string;

  /** Azure's dated API version, sent as `?api-version=` on every request: `2024-10-21`, `2025-04-01-preview`. */
  @IsString() @Matches(/^\d{4}-\d{2}-\d{2}(-preview)?$/, { message: '$property must be a dated API version such as 2024-10-21 or 2025-04-01-preview' })
  api_version: string;

  @IsOptional() @IsString() @Matches(/^[A-Za-z_][A-Za-z0-9_]*$/) api_key_env?: string;

  @IsInt() @Min(1) max_connections = 256;

  /** As openai-compatible's: the one field the deployment takes an output limit in (older API versions know only max_tokens). */
  @ValidateIf((p: AzureOpenAiProviderConfig) => p.output_limit_field !== undefined)
  @IsIn(OUTPUT_LIMIT_FIELDS)
  output_limit_field?: OutputLimitField;
}

/** Google's Gemini API (DESIGN.md section 11): generateContent and streamGenerateContent, `x-goog-api-key`; chat models only. */
export class GeminiProviderConfig extends ProviderConfigBase {
  static kinds: readonly ModelKind[] = ['chat'];
  declare type: 'gemini';

  /** Without a version path: `https://generativelanguage.googleapis.com`. */
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  base_url: string;

  @IsOptional() @IsString() @Matches(/^[A-Za-z_][A-Za-z0-9_]*$/) api_key_env?: string;

  @IsInt() @Min(1) max_connections = 256;
}

/**
 * Amazon Bedrock's Converse API through the AWS SDK (DESIGN.md section 11): SigV4 with static credentials from the
 * named env vars, else the SDK's default credential chain; chat models only.
 */
export class BedrockProviderConfig extends ProviderConfigBase {
  static kinds: readonly ModelKind[] = ['chat'];
  declare type: 'bedrock';

  /** The AWS region signed for and, without base_url, the endpoint's (`bedrock-runtime.<region>.amazonaws.com`). */
  @IsString() @Matches(/^[a-z]{2}(-[a-z]+)+-\d+$/, { message: 'region must be an AWS region such as us-east-1' }) region: string;

  /** An endpoint override (a VPC endpoint, a proxy, a test fake); unset: the region's. */
  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  base_url?: string;

  /** Env var names of static credentials (both or neither); unset: the SDK's default chain (env, profile, IMDS, …). */
  @ValidateIf((p: BedrockProviderConfig) => p.secret_access_key_env !== undefined || p.access_key_id_env !== undefined)
  @IsString()
  @Matches(/^[A-Za-z_][A-Za-z0-9_]*$/)
  access_key_id_env?: string;

  @ValidateIf((p: BedrockProviderConfig) => p.secret_access_key_env !== undefined || p.access_key_id_env !== undefined)
  @IsString()
  @Matches(/^[A-Za-z_][A-Za-z0-9_]*$/)
  secret_access_key_env?: string;

  @IsOptional() @IsString() @Matches(/^[A-Za-z_][A-Za-z0-9_]*$/) session_token_env?: string;

  @IsInt() @Min(1) max_connections = 256;
}

/** The built-in engines: dev-echo chat, espeak-ng speech, pocketsphinx transcription (`timeouts.request_ms` bounds an engine's run). */
export class LocalProviderConfig extends ProviderConfigBase {
  static kinds: readonly ModelKind[] = ['chat', 'transcription', 'speech'];
  declare type: 'local';
}

/** A provider's config, typed by its `type` (docs/configuration.md, "providers.<name>"). */
export type ProviderConfig =
  | OpenAiCompatibleProviderConfig
  | AnthropicProviderConfig
  | GeminiProviderConfig
  | BedrockProviderConfig
  | AzureOpenAiProviderConfig
  | LocalProviderConfig;

/** Each type's config class: the keys it takes, and (`kinds`) the kinds of catalog model it serves. */
export const PROVIDER_CONFIGS: { [T in ProviderType]: (new () => Extract<ProviderConfig, { type: T }>) & { kinds: readonly ModelKind[] } } = {
  'openai-compatible': OpenAiCompatibleProviderConfig,
  anthropic: AnthropicProviderConfig,
  'azure-openai': AzureOpenAiProviderConfig,
  gemini: GeminiProviderConfig,
  bedrock: BedrockProviderConfig,
  local: LocalProviderConfig,
};
