import { IsInt, IsOptional, IsString, IsUrl, Matches, Min } from 'class-validator';
import { ProviderConfigBase } from '../../config/provider-configs.schema';

/** Google's Gemini API (DESIGN.md section 11): generateContent and streamGenerateContent, `x-goog-api-key`; chat models only. */
export class GeminiProviderConfig extends ProviderConfigBase {
  declare type: 'gemini';

  /** Without a version path: `https://generativelanguage.googleapis.com`. */
  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  base_url: string;

  @IsOptional() @IsString() @Matches(/^[A-Za-z_][A-Za-z0-9_]*$/) api_key_env?: string;

  @IsInt() @Min(1) max_connections = 256;
}
