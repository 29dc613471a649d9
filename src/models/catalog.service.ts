import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, GatewayError } from '../errors';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { CatalogEntry, GatewayConfig, ModelKind } from '../config/gateway-config.schema';
import { isModelPattern, ModelPattern } from '../config/model-pattern';
import { AnthropicModelInfo, anthropicModelInfo, AnthropicModelList, anthropicModelPage, AnthropicPageQuery } from './anthropic-models';
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
  /** Every exact name a client may send as `model`: the entries' ids and their aliases (the loader keeps them unique). */
  private readonly byName: Map<string, CatalogEntry>;
  /** The aliases with wildcards (`claude-*`), in catalog order: tried after every exact name. */
  private readonly patterns: { pattern: ModelPattern; entry: CatalogEntry }[] = [];
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {
    this.byName = new Map(config.catalog.map((m) => [m.id, m]));
    for (const m of config.catalog) {
      for (const alias of m.aliases ?? []) {
        if (isModelPattern(alias)) this.patterns.push({ pattern: new ModelPattern(alias), entry: m });
        else this.byName.set(alias, m);
      }
    }
  }

  /** The entry a client's `model` names: by its id or one of its aliases, else the first alias pattern it matches. */
  find(name: string): CatalogEntry | undefined {
    return this.byName.get(name) ?? this.patterns.find(({ pattern }) => pattern.matches(name))?.entry;
  }

  all(): CatalogEntry[] {
    return this.config.catalog;
  }

  /**
   * Every id and exact alias, and the alias patterns as SQL `LIKE` patterns: the names a usage record's `model`
   * may hold for a request the catalog served.
   */
  names(): { exact: string[]; like: string[] } {
    return { exact: [...this.byName.keys()], like: this.patterns.map(({ pattern }) => pattern.sqlLike()) };
  }

  /**
   * The model a usage record names: the client's own `model` when it is an alias of the entry that served, or
   * matches one of its patterns (recorded as requested), else the entry's id (an unknown name, or a transcription
   * model that was ignored).
   */
  recordedModel(servedId: string, requested: unknown): string {
    return typeof requested === 'string' && this.find(requested)?.id === servedId ? requested : servedId;
  }

  ofKind(kind: ModelKind): CatalogEntry[] {
    return this.config.catalog.filter((m) => m.kind === kind);
  }

  /** The one transcription model that serves every transcription call, whatever `model` says. */
  activeTranscriptionModel(): CatalogEntry | undefined {
    return this.config.catalog.find((m) => m.kind === 'transcription' && m.active);
  }

  /** GET /v1/models: every entry under its id (aliases are not listed). */
  listing(): { object: 'list'; data: ModelObject[] } {
    return { object: 'list', data: this.config.catalog.map((m) => this.modelObject(m, m.id)) };
  }

  /** GET /v1/models/{id}: the entry of that id or alias (or alias pattern), under that name; else 404 model_not_found. */
  model(name: string): ModelObject {
    const entry = this.find(name);
    if (!entry) throw modelNotFound(name);
    return this.modelObject(entry, name);
  }

  /** GET /v1/models in Anthropic's shape: the chat models only, a page of them. */
  anthropicListing(page: AnthropicPageQuery): AnthropicModelList {
    return anthropicModelPage(
      this.ofKind('chat').map((m) => anthropicModelInfo(m, m.id, this.createdOf(m))),
      page,
    );
  }

  /** GET /v1/models/{id} in Anthropic's shape: a chat model by its id or alias (or alias pattern); any other name is 404. */
  anthropicModel(name: string): AnthropicModelInfo {
    const entry = this.find(name);
    if (!entry || entry.kind !== 'chat') throw modelNotFound(name);
    return anthropicModelInfo(entry, name, this.createdOf(entry));
  }

  private modelObject(m: CatalogEntry, name: string): ModelObject {
    return { id: name, object: 'model', created: this.createdOf(m), owned_by: m.provider };
  }

  private createdOf(m: CatalogEntry): number {
    return m.created ?? this.created;
  }
}

function modelNotFound(name: string): GatewayError {
  return new GatewayError(ErrorCode.ModelNotFound, `The model ${quotedModel(name)} does not exist; GET /v1/models lists the models served.`, 'model');
}
