/**
 * OpenTelemetry's `gen_ai.provider.name` of each provider type that has one (GenAI conventions' well-known values);
 * another (`openai-compatible`, `local`) is named by its name in the config (`groq`, `vllm`).
 */
const PROVIDER_NAMES: Readonly<Record<string, string>> = {
  openai: 'openai',
  'azure-openai': 'azure.ai.openai',
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
  bedrock: 'aws.bedrock',
};

export function genAiProviderName(type: string, configName: string): string {
  return PROVIDER_NAMES[type] ?? configName;
}
