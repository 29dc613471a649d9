import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  ValidateBy,
  ValidateIf,
  ValidateNested,
  ValidationArguments,
} from 'class-validator';
import { ExactPrice } from './exact-price';
import { PriceSheetFields } from './price-variants.schema';

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

/** One upstream serving a catalog model, when the model lists several (docs/configuration.md, "deployments"). */
export class DeploymentConfig {
  @IsString() provider: string;
  @IsString() upstream_model: string;
  /** Share of the traffic among the deployments of one priority. */
  @IsNumber() @Min(0.001) weight = 1;
  /** Lower first: a priority is used only while every deployment of a lower one is out. */
  @IsInt() @Min(0) priority = 0;
}

/** How a deployment is named in usage records, metrics and the admin API. */
export function deploymentName(upstream: { provider: string; upstream_model: string }): string {
  return `${upstream.provider}/${upstream.upstream_model}`;
}

/** Deployments one model may list: the router tracks which were tried in one request as bits of a number. */
export const MAX_DEPLOYMENTS = 16;

const isGiven = (_: object, value: unknown) => value !== undefined;

/** What a catalog id (or alias) may hold: what clients send as `model`, and a path segment of /v1/models/{id}. */
export const MODEL_ID = /^[A-Za-z0-9._:\/-]+$/;
/** What an alias may hold: an id, or a pattern of the id alphabet and `*` wildcards (config/model-pattern.ts). */
const MODEL_ALIAS = /^[A-Za-z0-9._:\/*-]+$/;

/** A catalog model; its price sheet beyond the flat prices (`price_variants`, `tool_fees`) is PriceSheetFields'. */
export class CatalogEntry extends PriceSheetFields {
  @IsString() @Matches(MODEL_ID) id: string;
  /**
   * Other names clients may send as `model` for this entry (unique across ids and aliases: checked by the loader),
   * or patterns with `*` (`claude-*`), tried after every exact id and alias, in catalog order.
   */
  @IsOptional()
  @IsArray()
  @IsString({ each: true, message: 'each alias must be a string' })
  @Matches(MODEL_ALIAS, { each: true, message: 'each alias must hold only letters, digits and . _ : / - (as an id), and * as a wildcard' })
  aliases?: string[];
  @IsIn(MODEL_KINDS) kind: ModelKind;
  /** With `deployments`, the loader sets these two to the first deployment's (the model's primary). */
  @ValidateIf((m: CatalogEntry) => m.deployments === undefined) @IsString() provider: string;
  @ValidateIf((m: CatalogEntry) => m.deployments === undefined) @IsString() upstream_model: string;

  @IsOptional() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(MAX_DEPLOYMENTS) @ValidateNested({ each: true }) @Type(() => DeploymentConfig)
  deployments?: DeploymentConfig[];
  /** Further attempts on other deployments after a failure before the answer's first byte. */
  @IsInt() @Min(0) @Max(MAX_DEPLOYMENTS - 1) retries = 2;
  /** Consecutive failures that take a deployment out (circuit open). */
  @IsInt() @Min(1) failure_threshold = 5;
  /** How long a deployment stays out before one probe request is let through. */
  @IsNumber() @Min(0.001) @Max(3600) cooldown_s = 30;

  @ValidateIf((m: CatalogEntry) => m.kind === 'chat') @IsNumber() @Min(0) @ExactPrice() input_price_per_million?: number;
  @ValidateIf((m: CatalogEntry) => m.kind === 'chat') @IsNumber() @Min(0) @ExactPrice() output_price_per_million?: number;
  // Token classes with a price of their own (docs/billing.md, "Token classes"); left out: the input or output
  // price. An empty value (null) is refused: it is more likely a forgotten price than a wish for the default.
  @ValidateIf(isGiven) @IsNumber() @Min(0) @ExactPrice() cached_input_price_per_million?: number;
  @ValidateIf(isGiven) @IsNumber() @Min(0) @ExactPrice() cache_write_price_per_million?: number;
  /** 1-hour cache writes (a part of the cache writes); left out: the cache-write price. */
  @ValidateIf(isGiven) @IsNumber() @Min(0) @ExactPrice() cache_write_1h_price_per_million?: number;
  @ValidateIf(isGiven) @IsNumber() @Min(0) @ExactPrice() audio_input_price_per_million?: number;
  @ValidateIf(isGiven) @IsNumber() @Min(0) @ExactPrice() audio_output_price_per_million?: number;
  @ValidateIf((m: CatalogEntry) => m.kind === 'chat') @IsInt() @Min(1) max_output_tokens?: number;
  /** Anthropic and Bedrock: cache breakpoints added to requests that carry none (DESIGN.md section 11). */
  @IsOptional() @IsBoolean() auto_cache?: boolean;
  /** Upper bound of the model's context, used to bound the prompt estimate. */
  @IsOptional() @IsInt() @Min(1) context_window?: number;

  @IsOptional() @IsBoolean() active?: boolean;

  @IsOptional() @IsArray() @ArrayMinSize(1) @IsString({ each: true }) voices?: string[];
  /** Other names clients may send as `voice` (OpenAI's, typically), each naming one of `voices` (checked in voice-aliases.ts). */
  @IsOptional() @IsObject() voice_aliases?: Record<string, string>;
  @IsOptional() @IsArray() @ArrayMinSize(1) @IsIn(SPEECH_FORMATS, { each: true }) response_formats?: SpeechFormat[];

  @IsOptional() @IsInt() @Min(0) created?: number;
}

export class ChatBurstConfig {
  @IsInt() @Min(1) requests = 60;
  @IsNumber() @Min(0.001) window_s = 10;
}

export class LimitsConfig {
  @ValidateNested() @Type(() => ChatBurstConfig) chat_burst: ChatBurstConfig = new ChatBurstConfig();
  @IsInt() @Min(1) speech_max_input_chars = 4096;
  /** At most 256 MiB: a body is decoded as one string, and V8's strings end near 512 M characters. */
  @IsInt() @Min(1024) @Max(256 * 1024 * 1024) json_body_max_bytes = 10 * 1024 * 1024;
  /** Nesting of objects and arrays in a JSON body (docs/configuration.md): bounds the work of validating it. */
  @IsInt() @Min(8) @Max(1000) json_body_max_depth = 64;
  /** Object keys and array elements of a JSON body, counted together. */
  @IsInt() @Min(1000) @Max(10_000_000) json_body_max_keys = 100_000;
  @IsInt() @Min(1) @Max(64 * 1024 * 1024) transcription_max_bytes = 4 * 1024 * 1024;
  // How long a client may take to send its request (docs/configuration.md, "limits").
  @IsInt() @Min(1) @Max(600_000) headers_timeout_ms = 10_000;
  @IsInt() @Min(1) @Max(600_000) request_timeout_ms = 60_000;
  @IsInt() @Min(1) @Max(600_000) body_idle_timeout_ms = 15_000;
}

export class FairUseConfig {
  @IsInt() @Min(0) monthly_requests = 1000;
}

/** A live replica must renew its leases several times per lifetime, so that one late or failed renewal does not lose them. */
function WellBelowLeaseTtl(): PropertyDecorator {
  const ttlOf = (args?: ValidationArguments) => (args?.object as BillingConfig).lease_ttl_s;
  return ValidateBy({
    name: 'wellBelowLeaseTtl',
    validator: {
      validate: (interval: unknown, args) => typeof interval === 'number' && interval * 2 < ttlOf(args),
      defaultMessage: (args) => `$property must be less than half of billing.lease_ttl_s (${ttlOf(args)})`,
    },
  });
}

export class BillingConfig {
  /** How often each replica renews its budget leases and sweeps expired holds (docs/billing.md, "Hold sweeper"). */
  @IsInt() @Min(1) @WellBelowLeaseTtl() hold_sweep_interval_s = 2;
  /** A budget lease not renewed for this long is its dead replica's, and any replica's sweeper gives its money back. */
  @IsInt() @Min(3) @Max(3600) lease_ttl_s = 10;
  /** A replica gives an account's budget lease back after this long without a request (docs/billing.md). */
  @IsInt() @Min(1) @Max(60_000) lease_idle_ms = 1000;
  /** A settlement nobody waits for waits up to this long to share its database call with others (docs/billing.md). */
  @IsInt() @Min(0) @Max(1000) settlement_linger_ms = 10;
}

/** Idempotency-Key (DESIGN.md section 11, docs/idempotency.md). */
export class IdempotencyConfig {
  /** How long a first answer is kept for its repeats. */
  @IsInt() @Min(60) @Max(7 * 86_400) keep_s = 86_400;
  /** A running request's claim lasts this long unless its replica renews it (every third of it): a dead replica's claim lapses. */
  @IsInt() @Min(1) @Max(3600) claim_ttl_s = 60;
  /** The largest answer kept (a JSON body, a stream's events, speech audio); a larger one is not kept and its repeat runs anew. */
  @IsInt() @Min(1024) @Max(64 * 1024 * 1024) max_answer_bytes = 8 * 1024 * 1024;
}

export class GatewayConfig {
  @IsObject() providers: Record<string, ProviderConfig>;
  @IsArray() @ArrayMinSize(1) @ValidateNested({ each: true }) @Type(() => CatalogEntry) catalog: CatalogEntry[];
  @ValidateNested() @Type(() => LimitsConfig) limits: LimitsConfig = new LimitsConfig();
  @ValidateNested() @Type(() => FairUseConfig) fair_use: FairUseConfig = new FairUseConfig();
  @ValidateNested() @Type(() => BillingConfig) billing: BillingConfig = new BillingConfig();
  @ValidateNested() @Type(() => IdempotencyConfig) idempotency: IdempotencyConfig = new IdempotencyConfig();
}
