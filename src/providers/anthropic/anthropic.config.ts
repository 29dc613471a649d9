import { IsInt, IsOptional, IsString, IsUrl, Matches, Min } from 'class-validator';
import { ProviderConfigBase } from '../../config/provider-configs.schema';

/** Anthropic's Messages API (DESIGN.md section 11): `x-api-key` with `anthropic-version`; chat models only. */
export class AnthropicProviderConfig extends ProviderConfigBase {
  declare type: 'anthropic';

  /** Without /v1: `https://api.anthropic.com`. */
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  base_url: string;

  @IsOptional() @IsString() @Matches(/^[A-Za-z_][A-Za-z0-9_]*$/) api_key_env?: string;

  @IsInt() @Min(1) max_connections = 256;
}
