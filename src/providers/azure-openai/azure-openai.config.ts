import { IsIn, IsInt, IsOptional, IsString, IsUrl, Matches, Min, ValidateIf } from 'class-validator';
import { ProviderConfigBase, OUTPUT_LIMIT_FIELDS, OutputLimitField } from '../../config/provider-configs.schema';

/**
 * Azure OpenAI (DESIGN.md section 11): OpenAI's bodies at `/openai/deployments/{upstream_model}/…?api-version=`,
 * with an `api-key` header. One api_version per provider: a deployment that needs another is a second provider.
 */
export class AzureOpenAiProviderConfig extends ProviderConfigBase {
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
