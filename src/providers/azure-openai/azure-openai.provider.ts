import { CatalogEntry } from '../../config/gateway-config.schema';
import { ChatChunk } from '../chat-contract';
import { TransportHooks, UpstreamOperation } from '../http/http-transport';
import { fixedHeaders, UpstreamAuth } from '../http/upstream-auth';
import { OpenAiCompatibleProvider } from '../openai-compatible/openai-compatible.provider';
import { providerType } from '../provider-type';
import { ChatRequestBody, UpstreamChatStream } from '../upstream-provider';
import { AzureOpenAiProviderConfig } from './azure-openai.config';
import { azureErrorMessage } from './azure-openai-errors';

/** Azure OpenAI's `api-key` header (none without a key); never an Authorization header. */
export function azureApiKeyAuth(key: string | undefined): UpstreamAuth {
  return fixedHeaders(key ? { 'api-key': key } : {});
}

/** Each operation's endpoint under a deployment (https://learn.microsoft.com/azure/ai-services/openai/reference). */
const OPERATIONS: Record<Exclude<UpstreamOperation, 'count_tokens'>, string> = {
  chat: 'chat/completions',
  chat_stream: 'chat/completions',
  transcription: 'audio/transcriptions',
  speech: 'audio/speech',
};

/**
 * Azure's transport: the catalog's upstream_model is the deployment's name, in the path; the provider's
 * api_version in the query of every request; the key in `api-key`; the content filter's categories read from
 * its 400s.
 */
export function azureHooks(config: AzureOpenAiProviderConfig, env: NodeJS.ProcessEnv = process.env): TransportHooks {
  const key = config.api_key_env ? env[config.api_key_env] : undefined;
  const query = `?api-version=${encodeURIComponent(config.api_version)}`;
  // Azure has no token-count endpoint: this provider never asks for one.
  const path = (operation: UpstreamOperation, deployment: string) =>
    `/openai/deployments/${encodeURIComponent(deployment)}/${OPERATIONS[operation as Exclude<UpstreamOperation, 'count_tokens'>]}${query}`;
  return { auth: azureApiKeyAuth(key), path, errorMessage: azureErrorMessage };
}

/**
 * Azure OpenAI (DESIGN.md section 11, docs/configuration.md "azure-openai"): OpenAI's bodies, answers and usage,
 * through Azure's transport (azureHooks). Its streams open with a chunk of `prompt_filter_results` and no
 * choices, which OpenAI never sends: it is left out, so that chat clients reading `choices[0]` see OpenAI's
 * stream. The filter's per-choice `content_filter_results`, and finish_reason `content_filter` for an answer it
 * cut, pass as they came.
 */
export class AzureOpenAiProvider extends OpenAiCompatibleProvider {
  constructor(name: string, config: AzureOpenAiProviderConfig, env: NodeJS.ProcessEnv = process.env) {
    super(name, config, azureHooks(config, env));
  }

  async chatStream(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatStream> {
    return withoutFilterOnlyChunks(await super.chatStream(model, body, signal));
  }
}

/** The stream without Azure's chunks that carry neither a choice nor usage (its prompt_filter_results). */
export async function* withoutFilterOnlyChunks(chunks: UpstreamChatStream): AsyncGenerator<ChatChunk> {
  for await (const chunk of chunks) {
    if (Array.isArray(chunk.choices) && chunk.choices.length === 0 && (chunk.usage === undefined || chunk.usage === null)) continue;
    yield chunk;
  }
}

/** The `azure-openai` provider type: chat, transcription and speech, as OpenAI's. */
export const AZURE_OPENAI = providerType({
  type: 'azure-openai',
  config: AzureOpenAiProviderConfig,
  kinds: ['chat', 'transcription', 'speech'],
  create: (name, config) => new AzureOpenAiProvider(name, config),
});
