import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { CatalogEntry, GatewayConfig, ProviderConfig } from '../config/gateway-config.schema';
import { AnthropicProvider } from './anthropic/anthropic.provider';
import { AzureOpenAiProvider } from './azure-openai/azure-openai.provider';
import { GeminiProvider } from './gemini/gemini.provider';
import { BedrockProvider } from './bedrock/bedrock.provider';
import { LocalProvider } from './local/local.provider';
import { OpenAiCompatibleProvider } from './openai-compatible/openai-compatible.provider';
import { TokenCountUpstream, UpstreamProvider } from './upstream-provider';

/** A provider serves the kinds its type states (PROVIDER_CONFIGS): some of UpstreamProvider's interfaces. */
type ClosableProvider = Partial<UpstreamProvider & TokenCountUpstream> & { close(): Promise<void> };

/** Each provider type's implementation, built from its own config (a union keyed by `type`, checked at start). */
function providerFor(name: string, config: ProviderConfig): ClosableProvider {
  switch (config.type) {
    case 'openai-compatible':
      return new OpenAiCompatibleProvider(name, config);
    case 'anthropic':
      return new AnthropicProvider(name, config);
    case 'azure-openai':
      return new AzureOpenAiProvider(name, config);
    case 'gemini':
      return new GeminiProvider(name, config);
    case 'bedrock':
      return new BedrockProvider(name, config);
    case 'local':
      return new LocalProvider(name, config);
  }
}

/** One adapter instance (and connection pool) per configured provider, looked up by catalog entry. */
@Injectable()
export class ProviderRegistry implements OnApplicationShutdown {
  private readonly providers = new Map<string, ClosableProvider>();

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    for (const [name, providerConfig] of Object.entries(config.providers)) {
      this.providers.set(name, providerFor(name, providerConfig));
    }
  }

  forModel(model: CatalogEntry): UpstreamProvider {
    // The config loader checks that every catalog entry names a configured provider, of a type that serves its
    // kind: the methods of that kind are there.
    return this.providers.get(model.provider) as UpstreamProvider;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.providers.values()].map((p) => p.close()));
  }
}
