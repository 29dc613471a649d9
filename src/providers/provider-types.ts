import { ANTHROPIC } from './anthropic/anthropic.provider';
import { AZURE_OPENAI } from './azure-openai/azure-openai.provider';
import { BEDROCK } from './bedrock/bedrock.provider';
import { GEMINI } from './gemini/gemini.provider';
import { LOCAL } from './local/local.provider';
import { OPENAI_COMPATIBLE } from './openai-compatible/openai-compatible.provider';
import { OPENAI } from './openai/openai.provider';
import { ProviderType } from './provider-type';

/**
 * Every provider type the gateway serves, by its `type` in the config file: the one list a new type joins (its
 * folder states its config class, the kinds it serves and its factory: provider-type.ts). The config loader gets
 * this map from its caller (main.ts), the registry builds each configured provider with it.
 */
export const PROVIDER_TYPES: Readonly<Record<string, ProviderType>> = Object.fromEntries(
  [OPENAI_COMPATIBLE, OPENAI, ANTHROPIC, GEMINI, BEDROCK, AZURE_OPENAI, LOCAL].map((type) => [type.type, type]),
);
