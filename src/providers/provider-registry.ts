import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { CatalogEntry, GatewayConfig, ProviderConfig } from '../config/gateway-config.schema';
import { LocalProvider } from './local/local.provider';
import { OpenAiCompatibleProvider } from './openai-compatible/openai-compatible.provider';
import { UpstreamProvider } from './upstream-provider';

type ClosableProvider = UpstreamProvider & { close(): Promise<void> };

/** Each provider type's implementation, built from its own config (a union keyed by `type`, checked at start). */
function providerFor(name: string, config: ProviderConfig): ClosableProvider {
  switch (config.type) {
    case 'openai-compatible':
      return new OpenAiCompatibleProvider(name, config);
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
    // The config loader checks that every catalog entry names a configured provider, of a type that serves its kind.
    return this.providers.get(model.provider)!;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.providers.values()].map((p) => p.close()));
  }
}
