import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, GatewayError } from '../errors';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { CatalogEntry, GatewayConfig, ModelKind } from '../config/gateway-config.schema';
import { quotedModel } from './requested-model';

/** A catalog entry as OpenAI's `Model` object. */
export interface ModelObject {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
}

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

  listing(): { object: 'list'; data: ModelObject[] } {
    return { object: 'list', data: this.config.catalog.map((m) => this.modelObject(m)) };
  }

  /** GET /v1/models/{id}: the entry of that exact id, or 404 model_not_found. */
  model(id: string): ModelObject {
    const entry = this.byId.get(id);
    if (!entry) {
      throw new GatewayError(ErrorCode.ModelNotFound, `The model ${quotedModel(id)} does not exist; GET /v1/models lists the models served.`, 'model');
    }
    return this.modelObject(entry);
  }

  private modelObject(m: CatalogEntry): ModelObject {
    return { id: m.id, object: 'model', created: m.created ?? this.created, owned_by: m.provider };
  }
}
