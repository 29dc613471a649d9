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
import { RateLimitsConfig } from './rate-limits.schema';
import { WebhookConfig, WebhookDeliveryConfig } from './webhooks.schema';
import { MODEL_KINDS, ModelKind, ProviderConfigBase, SPEECH_FORMATS, SpeechFormat } from './provider-configs.schema';

export * from './provider-configs.schema';

/** The APIs a chat model may be reached on upstream (`upstream_api`). */
export const UPSTREAM_APIS = ['chat', 'responses'] as const;
export type UpstreamApi = (typeof UPSTREAM_APIS)[number];

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
  /**
   * The upstream API a chat model is reached on (DESIGN.md section 12): `chat` (chat completions), or `responses` for
   * the models OpenAI serves only on /v1/responses; `responses` needs every deployment on an `openai` provider (the loader).
   */
  @IsOptional() @IsIn(UPSTREAM_APIS) upstream_api?: UpstreamApi;
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
  /** Each an instance of its type's config class (the loader's), which the provider of that type reads. */
  @IsObject() providers: Record<string, ProviderConfigBase>;
  @IsArray() @ArrayMinSize(1) @ValidateNested({ each: true }) @Type(() => CatalogEntry) catalog: CatalogEntry[];
  @ValidateNested() @Type(() => LimitsConfig) limits: LimitsConfig = new LimitsConfig();
  @ValidateNested() @Type(() => FairUseConfig) fair_use: FairUseConfig = new FairUseConfig();
  @ValidateNested() @Type(() => BillingConfig) billing: BillingConfig = new BillingConfig();
  @ValidateNested() @Type(() => IdempotencyConfig) idempotency: IdempotencyConfig = new IdempotencyConfig();
  @ValidateNested() @Type(() => RateLimitsConfig) rate_limits: RateLimitsConfig = new RateLimitsConfig();
  /** Receivers of alerts (DESIGN.md 12.4); none: events are kept in the outbox, not sent. */
  @IsArray() @ValidateNested({ each: true }) @Type(() => WebhookConfig) webhooks: WebhookConfig[] = [];
  @ValidateNested() @Type(() => WebhookDeliveryConfig) webhook_delivery: WebhookDeliveryConfig = new WebhookDeliveryConfig();
}
