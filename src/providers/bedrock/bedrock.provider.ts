import type { CatalogEntry } from '../../config/gateway-config.schema';
import { providerType } from '../provider-type';
import type { ChatRequestBody, ChatUpstream, UpstreamChatJson, UpstreamChatStream } from '../upstream-provider';
import { BedrockProviderConfig } from './bedrock.config';
import { chunksOfConverseStream, completionOfConverse } from './bedrock-to-chat';
import { BedrockTransport } from './bedrock-transport';
import { converseInput } from './chat-to-bedrock';

/**
 * Amazon Bedrock's Converse API (DESIGN.md section 11, docs/configuration.md "bedrock"), chat models only: every
 * client dialect arrives as a chat body, translated to Converse (chat-to-bedrock.ts), sent through the AWS SDK
 * (bedrock-transport.ts) and read back into the chat contract (bedrock-to-chat.ts), usage in chat's token classes.
 */
export class BedrockProvider implements ChatUpstream {
  private readonly transport: BedrockTransport;

  constructor(readonly name: string, config: BedrockProviderConfig, env: NodeJS.ProcessEnv = process.env) {
    this.transport = new BedrockTransport(name, config, env);
  }

  async chat(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatJson> {
    const { answer, requestId } = await this.transport.converse(converseInput(body, model), signal);
    return { body: completionOfConverse(answer, body.model, requestId) };
  }

  async chatStream(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatStream> {
    const { events, requestId } = await this.transport.converseStream(converseInput(body, model), signal);
    return chunksOfConverseStream(this.name, body.model, requestId, events);
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}

/** The `bedrock` provider type: chat models. */
export const BEDROCK = providerType({
  type: 'bedrock',
  config: BedrockProviderConfig,
  kinds: ['chat'],
  create: (name, config) => new BedrockProvider(name, config),
});
