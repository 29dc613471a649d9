import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { CatalogEntry, GatewayConfig, ModelKind } from '../config/gateway-config.schema';
import { BuiltProvider, KindUpstreams } from './provider-type';
import { PROVIDER_TYPES } from './provider-types';
import { ChatUpstream, SpeechUpstream, TokenCountUpstream, TranscriptionUpstream } from './upstream-provider';

/** A configured provider, with the kinds its type serves. */
interface Configured {
  readonly upstream: BuiltProvider;
  readonly kinds: readonly ModelKind[];
}

/** The provider serves `kind`: its type says so, and its type's factory was held to that by the compiler (providerType). */
function serving<K extends ModelKind>(provider: Configured, kind: K): provider is Configured & { readonly upstream: BuiltProvider & KindUpstreams[K] } {
  return provider.kinds.includes(kind);
}

/**
 * One provider instance (and connection pool) per configured provider, built by its type's factory
 * (provider-types.ts); a route gets the one interface it calls, for a catalog entry (its provider by name).
 */
@Injectable()
export class ProviderRegistry implements OnApplicationShutdown {
  private readonly providers = new Map<string, Configured>();

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    for (const [name, settings] of Object.entries(config.providers)) {
      const type = PROVIDER_TYPES[settings.type];
      if (!type) throw new Error(`Provider "${name}" is of type ${settings.type}, which the gateway does not know.`);
      this.providers.set(name, { upstream: type.create(name, settings), kinds: type.kinds });
    }
  }

  /** The chat interface of the entry's provider, and its own token count where it has one (Anthropic's). */
  chatFor(model: CatalogEntry): ChatUpstream & Partial<TokenCountUpstream> {
    return this.serving(model, 'chat');
  }

  transcriptionFor(model: CatalogEntry): TranscriptionUpstream {
    return this.serving(model, 'transcription');
  }

  speechFor(model: CatalogEntry): SpeechUpstream {
    return this.serving(model, 'speech');
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([...this.providers.values()].map((p) => p.upstream.close()));
  }

  private serving<K extends ModelKind>(model: CatalogEntry, kind: K): BuiltProvider & KindUpstreams[K] {
    const provider = this.configured(model);
    // The loader refused at start an entry whose provider's type does not serve its kind.
    if (!serving(provider, kind)) throw new Error(`Provider "${model.provider}" serves no ${kind} models (catalog entry ${model.id}).`);
    return provider.upstream;
  }

  private configured(model: CatalogEntry): Configured {
    const provider = this.providers.get(model.provider);
    if (!provider) throw new Error(`No provider "${model.provider}" for catalog entry ${model.id}.`);
    return provider;
  }
}
