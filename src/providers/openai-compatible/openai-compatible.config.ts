import { IsIn, IsInt, IsOptional, IsString, IsUrl, Matches, Min, ValidateIf } from 'class-validator';
import { ProviderConfigBase, OUTPUT_LIMIT_FIELDS, OutputLimitField } from '../../config/provider-configs.schema';

/** Any server speaking OpenAI's API, over HTTP with a bearer key. */
export class OpenAiCompatibleProviderConfig extends ProviderConfigBase {
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
