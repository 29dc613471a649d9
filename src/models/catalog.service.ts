import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { CatalogEntry, GatewayConfig, ModelKind } from '../config/gateway-config.schema';

/** The model catalog: the same for every account, straight from the config file. */
@Injectable()
export class CatalogService {
  private readonly byId: Map<string, CatalogEntry>;
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {
    this.byId = new Map(config.catalog.map((m) => [m.id, m]));
  }

  find(id: string): CatalogEntry | undefined {
    return this.byId.get(id);
  }

  all(): CatalogEntry[] {
    return this.config.catalog;
  }

  ofKind(kind: ModelKind): CatalogEntry[] {
    return this.config.catalog.filter((m) => m.kind === kind);
  }

  /** The one transcription model that serves every transcription call, whatever `model` says. */
  activeTranscriptionModel(): CatalogEntry | undefined {
    return this.config.catalog.find((m) => m.kind === 'transcription' && m.active);
  }

  listing() {
    return {
      object: 'list' as const,
      data: this.config.catalog.map((m) => ({
        id: m.id,
        object: 'model' as const,
        created: m.created ?? this.created,
        owned_by: m.provider,
      })),
    };
  }
}
