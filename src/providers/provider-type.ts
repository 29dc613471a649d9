import type { ModelKind, ProviderConfigBase } from '../config/gateway-config.schema';
import type { ChatUpstream, SpeechUpstream, TokenCountUpstream, TranscriptionUpstream } from './upstream-provider';

/** The interface a provider implements for each kind of catalog model it serves. */
export interface KindUpstreams {
  chat: ChatUpstream;
  transcription: TranscriptionUpstream;
  speech: SpeechUpstream;
}

/** Every member of a union at once: (A | B) → A & B. */
type AllOf<U> = (U extends unknown ? (all: U) => void : never) extends (all: infer I) => void ? I : never;

/** A provider serving the kinds K: the interface of each, and close() for the shutdown. */
export type ProviderServing<K extends ModelKind> = AllOf<KindUpstreams[K]> & { close(): Promise<void> };

/** Any provider as the registry keeps it: the interfaces of some kinds (its type's `kinds` say which), maybe a token count, and close(). */
export type BuiltProvider = Partial<ChatUpstream & TranscriptionUpstream & SpeechUpstream & TokenCountUpstream> & { close(): Promise<void> };

/**
 * A provider type, as its folder states it: the `type` of its config entries, its config class (the keys it
 * takes, checked at start), the kinds of catalog model it serves, and the factory of its providers. The
 * compiler holds the kinds to the factory: a type that says it serves speech builds providers with `speech()`.
 */
export interface ProviderTypeDefinition<C extends ProviderConfigBase, K extends ModelKind> {
  readonly type: C['type'];
  readonly config: new () => C;
  readonly kinds: readonly K[];
  create(name: string, config: C): ProviderServing<K>;
}

/** A provider type as the registry and the config loader read it, whatever its config class. */
export interface ProviderType {
  readonly type: string;
  readonly config: new () => ProviderConfigBase;
  readonly kinds: readonly ModelKind[];
  create(name: string, config: ProviderConfigBase): BuiltProvider;
}

/**
 * A folder's provider type, for the map in provider-types.ts. Its factory takes only its own config class: the
 * loader built every provider's settings as its type's class, so anything else is a configuration that did not
 * come through the loader.
 */
export function providerType<C extends ProviderConfigBase, K extends ModelKind>(definition: ProviderTypeDefinition<C, K>): ProviderType {
  const { type, config: configClass, kinds } = definition;
  return {
    type,
    config: configClass,
    kinds,
    create(name, config) {
      if (!(config instanceof configClass)) throw new Error(`Provider "${name}" has settings not validated as a ${type} config.`);
      return definition.create(name, config);
    },
  };
}
