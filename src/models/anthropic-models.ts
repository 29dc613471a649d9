import { ErrorCode, GatewayError } from '../errors';
import { CatalogEntry } from '../config/gateway-config.schema';
import { quotedModel } from './requested-model';

/** A chat model as Anthropic's Models API answers it (https://docs.anthropic.com/en/api/models): what the catalog knows of it. */
export interface AnthropicModelInfo {
  type: 'model';
  id: string;
  display_name: string;
  /** RFC 3339. */
  created_at: string;
  /** The catalog's `context_window`, when it has one. */
  max_input_tokens: number | null;
  /** The catalog's `max_output_tokens`. */
  max_tokens: number | null;
}

export interface AnthropicModelList {
  data: AnthropicModelInfo[];
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

/** Anthropic's page parameters, checked: at most `limit` models after `afterId` or before `beforeId`. */
export interface AnthropicPageQuery {
  limit: number;
  afterId?: string;
  beforeId?: string;
}

/** Anthropic's default and largest page. */
const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 1000;

export function anthropicModelInfo(entry: CatalogEntry, name: string, createdUnixS: number): AnthropicModelInfo {
  return {
    type: 'model',
    id: name,
    display_name: name,
    created_at: new Date(createdUnixS * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    max_input_tokens: entry.context_window ?? null,
    max_tokens: entry.max_output_tokens ?? null,
  };
}

/**
 * The page of `models` a query asks for, as Anthropic pages its lists: `after_id` starts after that model,
 * `before_id` ends before it (the `limit` closest to it), `has_more` says whether more lie beyond the page in
 * the direction read. A cursor that is not a listed id is refused rather than read as an empty page.
 */
export function anthropicModelPage(models: AnthropicModelInfo[], page: AnthropicPageQuery): AnthropicModelList {
  let from = 0;
  let to = models.length;
  if (page.afterId !== undefined) from = cursorIndex(models, page.afterId, 'after_id') + 1;
  if (page.beforeId !== undefined) to = cursorIndex(models, page.beforeId, 'before_id');
  // Read backwards from before_id alone (the SDK's previous pages), forwards otherwise.
  const backwards = page.beforeId !== undefined && page.afterId === undefined;
  const data = backwards ? models.slice(Math.max(from, to - page.limit), to) : models.slice(from, Math.min(to, from + page.limit));
  return { data, has_more: to - from > page.limit, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}

function cursorIndex(models: AnthropicModelInfo[], id: string, param: string): number {
  const at = models.findIndex((m) => m.id === id);
  if (at < 0) throw new GatewayError(ErrorCode.InvalidRequest, `${param} ${quotedModel(id)} is not a model of this list.`, param);
  return at;
}

/** The page parameters of a query string (`limit`, `after_id`, `before_id`); others are ignored. 400 for a bad one. */
export function anthropicPageQuery(query: Record<string, unknown>): AnthropicPageQuery {
  const page: AnthropicPageQuery = { limit: DEFAULT_LIMIT };
  if (query.limit !== undefined) {
    const limit = typeof query.limit === 'string' && /^\d{1,4}$/.test(query.limit) ? Number(query.limit) : NaN;
    if (!(limit >= 1 && limit <= MAX_LIMIT)) {
      throw new GatewayError(ErrorCode.InvalidRequest, `limit must be an integer from 1 to ${MAX_LIMIT}.`, 'limit');
    }
    page.limit = limit;
  }
  for (const [param, field] of [['after_id', 'afterId'], ['before_id', 'beforeId']] as const) {
    const value = query[param];
    if (value === undefined) continue;
    if (typeof value !== 'string' || value === '') throw new GatewayError(ErrorCode.InvalidRequest, `${param} must be a model id, given once.`, param);
    page[field] = value;
  }
  return page;
}
