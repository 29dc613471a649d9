import { IsInt, IsOptional, IsString, IsUrl, Matches, Min } from 'class-validator';
import { ProviderConfigBase } from '../../config/provider-configs.schema';

/**
 * OpenAI's own platform (DESIGN.md section 12): chat, transcription and speech as `openai-compatible`, and its
 * Responses API natively (`/responses` under base_url): Responses clients passed through, and catalog entries with
 * `upstream_api: responses` reached there whatever the client's dialect.
 */
export class OpenAiProviderConfig extends ProviderConfigBase {
  declare type: 'openai';

  /** With /v1, as openai-compatible's; OpenAI's own by default. */
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  base_url = 'https://api.openai.com/v1';

  @IsOptional() @IsString() @Matches(/^[A-Za-z_][A-Za-z0-9_]*$/) api_key_env?: string;

  @IsInt() @Min(1) max_connections = 256;
}
