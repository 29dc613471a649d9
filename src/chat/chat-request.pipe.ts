import { Injectable, PipeTransform } from '@nestjs/common';
import { ErrorCode, GatewayError } from '../errors';
import { isJsonObject } from '../common/json/scalar-fields';
import { BodyProblem } from '../common/validation/compiled-body';
import { CatalogEntry } from '../config/gateway-config.schema';
import { PriceOptions } from '../config/price-options';
import { CatalogService } from '../models/catalog.service';
import { quotedModel, readRequestedModel } from '../models/requested-model';
import { UNSENT_CHAT_FIELDS } from '../providers/openai/chat-to-responses';
import { ChatRequestBody, PassThrough } from '../providers/upstream-provider';
import { checkChatCompletionBody } from './dto/chat-completion.schema';
import { IgnoredParam, ignoredParam } from './ignored-params';
import { pricedOptions } from './price-options-check';

/** A chat request that passed validation, with its catalog model and the original body. */
export interface ChatRequest {
  model: CatalogEntry;
  /** The client's body as sent (unknown fields included). */
  body: ChatRequestBody;
  stream: boolean;
  includeUsage: boolean;
  /** max_completion_tokens or max_tokens, when the client set one. */
  maxTokens: number | null;
  /** The field that sets the output limit in the client's dialect (the one it used, if any), named in a 402's advice. */
  maxTokensParam: string;
  choices: number;
  /**
   * The client's own request, for an upstream of its dialect (Messages in, `anthropic` up): sent instead of `body`
   * by such a provider (DESIGN.md section 11). The hold then bounds the prompt by this body.
   */
  passThrough?: PassThrough;
  /**
   * The price-changing options the request asked for (DESIGN.md section 12.2), each one its model prices (the
   * route refused the others): the hold covers them, and the charge falls back on them when the answer is silent.
   */
  priceOptions?: PriceOptions;
  /** The server tools the request offers whose fees its model prices, with their `max_uses` (null: none set): the hold covers them. */
  serverTools?: Record<string, number | null>;
}

/** A chat completion request: the chat request ChatService serves, and what the client asked for that the gateway did not use. */
export interface ChatCompletionRequest {
  chat: ChatRequest;
  ignored: IgnoredParam[];
}

/**
 * The metric labels of what chat completions ignore: `store: true`, and for an `upstream_api: responses` entry the
 * fields the Responses API has no place for (every other field goes upstream as sent).
 */
const KNOWN_IGNORED: ReadonlySet<string> = new Set(['store', ...UNSENT_CHAT_FIELDS]);

/**
 * Validates the parsed JSON body: codes of SPEC.md and DESIGN.md section 5, in that order; then the options that
 * change the upstream's price (DESIGN.md section 12.2), which stay in the body when the model prices them.
 */
@Injectable()
export class ChatRequestPipe implements PipeTransform<unknown, ChatCompletionRequest> {
  constructor(private readonly catalog: CatalogService) {}

  transform(body: unknown): ChatCompletionRequest {
    const { fields, model } = requestedChatModel(this.catalog, body);
    const problem = checkChatCompletionBody(fields);
    if (problem) throw chatBodyError(problem);
    // The body goes upstream as sent: Anthropic's speed and inference_geo would reach an upstream that takes them.
    const priceOptions = pricedOptions(model, fields);
    // Checked as far as the gateway relies on it (chat-completion.schema.ts); the rest is read with checks.
    const checked = fields as ChatRequestBody;
    const { upstream, ignored } = storingNothing(checked);
    if (model.upstream_api === 'responses') ignored.push(...unsentToResponses(checked));
    const chat: ChatRequest = {
      model,
      body: upstream,
      stream: checked.stream === true,
      includeUsage: isJsonObject(checked.stream_options) && checked.stream_options.include_usage === true,
      maxTokens: checked.max_completion_tokens ?? checked.max_tokens ?? null,
      maxTokensParam: checked.max_completion_tokens == null && checked.max_tokens != null ? 'max_tokens' : 'max_completion_tokens',
      choices: checked.n ?? 1,
    };
    if (priceOptions) chat.priceOptions = priceOptions;
    return { chat, ignored };
  }
}

/**
 * `store` goes upstream as false whatever the client sent (DESIGN.md section 12.2): the gateway keeps no state, and
 * a tenant's conversation is not to be kept in the operator's upstream account. A `store: true` is named as ignored;
 * a body without `store` goes as it came (OpenAI's default is false).
 */
function storingNothing(body: ChatRequestBody): { upstream: ChatRequestBody; ignored: IgnoredParam[] } {
  if (!Object.prototype.hasOwnProperty.call(body, 'store') || body.store === false) return { upstream: body, ignored: [] };
  const ignored = body.store === true ? [ignoredParam('store', KNOWN_IGNORED)] : [];
  return { upstream: { ...body, store: false }, ignored };
}

/** The fields a client set that a Responses upstream does not get (providers/openai/chat-to-responses.ts), in request order. */
function unsentToResponses(body: ChatRequestBody): IgnoredParam[] {
  return Object.keys(body)
    .filter((name) => UNSENT_CHAT_FIELDS.includes(name) && body[name] !== null && body[name] !== undefined && body[name] !== false)
    .map((name) => ignoredParam(name, KNOWN_IGNORED));
}

/** The catalog chat model a body names (chat, and the Responses API over it): 400 missing_model, unknown_model or model_not_hosted. */
export function requestedChatModel(catalog: CatalogService, body: unknown): { fields: Record<string, unknown>; model: CatalogEntry } {
  const { fields, modelId } = readRequestedModel(body);
  const model = catalog.find(modelId);
  if (!model) {
    throw new GatewayError(ErrorCode.UnknownModel, `The model ${quotedModel(modelId)} does not exist; GET /v1/models lists the models served.`, 'model');
  }
  if (model.kind !== 'chat') {
    throw new GatewayError(ErrorCode.ModelNotHosted, `The model "${model.id}" is a ${model.kind} model, not a chat model.`, 'model');
  }
  return { fields, model };
}

/** A 400 naming the field at fault (`Invalid max_tokens: …`, param `max_tokens`); a message's fault is worded for messages. */
function chatBodyError({ path, message }: BodyProblem): GatewayError {
  if (path === 'messages') {
    return new GatewayError(ErrorCode.InvalidRequest, 'Invalid messages: messages must be a non-empty array.', 'messages');
  }
  const at = /^messages\[\d+\]/.exec(path)?.[0];
  if (at) return new GatewayError(ErrorCode.InvalidRequest, `Invalid ${at}: a message must be an object with a string role.`, `${at}.role`);
  return new GatewayError(ErrorCode.InvalidRequest, `Invalid ${path}: ${message}.`, path);
}
