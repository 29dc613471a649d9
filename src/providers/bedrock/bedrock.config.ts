import { IsInt, IsOptional, IsString, IsUrl, Matches, Min, ValidateIf } from 'class-validator';
import { ProviderConfigBase } from '../../config/provider-configs.schema';

/**
 * Amazon Bedrock's Converse API through the AWS SDK (DESIGN.md section 11): SigV4 with static credentials from the
 * named env vars, else the SDK's default credential chain; chat models only.
 */
export class BedrockProviderConfig extends ProviderConfigBase {
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
