import { Inject, Injectable, PipeTransform } from '@nestjs/common';
import { ChatRequest, requestedChatModel } from '../chat/chat-request.pipe';
import { IgnoredParam } from '../chat/ignored-params';
import { pricedOptions } from '../chat/price-options-check';
import { BodyCheck } from '../common/validation/compiled-body';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { CatalogEntry, GatewayConfig } from '../config/gateway-config.schema';
import { PriceOptions } from '../config/price-options';
import { invalidField } from '../errors';
import { CatalogService } from '../models/catalog.service';
import { anthropicShare } from '../providers/anthropic/anthropic-deployments';
import { ChatRequestBody } from '../providers/upstream-provider';
import { checkCountTokensFields, checkMessagesFields, MAX_TOKENS_REQUIRED } from './dto/messages.schema';
import { chatMessages, ChatMessage } from './messages-input';
import { ignoredFields, refuseUnservedFields } from './messages-fields';
import { chatStop, chatToolChoice, chatTools, chatUser, passThroughToolChoice, passThroughTools } from './messages-tools';

/** What count_tokens counts: the chat messages and tool definitions the request would send upstream. */
export interface CountTokensRequest {
  model: CatalogEntry;
  messages: ChatMessage[];
  tools: Record<string, unknown>[] | undefined;
  ignored: IgnoredParam[];
  /** The body to send to the model's `anthropic` upstream, whose own count answers (DESIGN.md section 11). */
  passThroughBody?: Record<string, unknown>;
}

/** A Messages request that passed validation: the chat completion that serves it, and what it asked for that is not used. */
export interface MessagesRequest {
  chat: ChatRequest;
  ignored: IgnoredParam[];
  /**
   * The body as it goes to the model's `anthropic` deployments (passed through: DESIGN.md section 11), when it
   * has some; the controller adds the client's anthropic-* headers.
   */
  passThroughBody?: Record<string, unknown>;
}

/**
 * Validates a Messages body in chat's order (model first, then the fields), refuses what needs Anthropic's
 * platform, translates what chat can serve into the chat completion, and names the rest as ignored (docs/messages.md).
 */
@Injectable()
export class MessagesRequestPipe implements PipeTransform<unknown, MessagesRequest> {
  constructor(
    private readonly catalog: CatalogService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  transform(body: unknown): MessagesRequest {
    const { fields, model } = requestedChatModel(this.catalog, body);
    refuseUnservedFields(fields);
    if (fields.max_tokens === undefined || fields.max_tokens === null) throw invalidField('max_tokens', MAX_TOKENS_REQUIRED);
    const checked = checkedFields<CheckedMessagesFields>(checkMessagesFields, fields);
    // Tier, speed and region change the price (DESIGN.md section 12.2): refused unless priced, on either path.
    const asked = pricedOptions(model, fields);
    const share = anthropicShare(this.config, model);
    if (share === 'all') return passedThrough(model, fields, checked, asked);
    const passThroughBody = share === 'some' ? withoutWithdrawnTools(fields, passThroughTools(fields.tools).tools) : undefined;
    const chatBody: ChatRequestBody = { model: model.id, messages: chatMessages(fields.system, fields.messages) };
    const offer = chatTools(fields.tools);
    // A priced tier is chat's own field too, for the upstreams that read it; speed and inference_geo are Anthropic's
    // alone, and a chat body never reaches Anthropic from here (its deployments take the pass-through body).
    const tier = asked?.service_tier;
    setPresent(chatBody, {
      stream: checked.stream === true ? true : undefined,
      max_completion_tokens: checked.max_tokens,
      temperature: checked.temperature,
      top_p: checked.top_p,
      stop: chatStop(fields.stop_sequences),
      user: chatUser(fields.metadata),
      tools: offer.tools,
      ...chatToolChoice(fields.tool_choice, offer),
      service_tier: tier,
    });
    // Served by pass-through on some deployments, every option asked for may apply; translated only, the tier alone.
    const priceOptions = share === 'some' ? asked : tier === undefined ? undefined : { service_tier: tier };
    return {
      chat: chatRequest(model, chatBody, checked, priceOptions),
      ignored: ignoredFields(fields, offer.withdrawn, tier === undefined ? [] : ['service_tier']),
      passThroughBody,
    };
  }
}

/**
 * A model served only by `anthropic` upstreams: the body goes as sent (DESIGN.md section 11), checked only where
 * the hold and the charge read it (model, max_tokens, stream, messages); server tools are withdrawn (named in the
 * header: their use is billed by Anthropic apart from tokens) unless the model prices them (messages-tools.ts:
 * served, and named in `serverTools` for the hold). The chat view (`chat.body`) holds the messages as sent, for the
 * gateway's own count should the upstream report none.
 */
function passedThrough(model: CatalogEntry, fields: Record<string, unknown>, checked: CheckedMessagesFields, priceOptions: PriceOptions | undefined): MessagesRequest {
  if (!Array.isArray(fields.messages) || fields.messages.length === 0) throw invalidField('messages', 'messages must be a non-empty array of messages.');
  const offer = passThroughTools(fields.tools, model);
  passThroughToolChoice(fields.tool_choice, offer);
  const chatBody: ChatRequestBody = { model: model.id, messages: fields.messages, max_completion_tokens: checked.max_tokens };
  if (offer.tools) chatBody.tools = offer.tools;
  const chat = chatRequest(model, chatBody, checked, priceOptions);
  if (offer.serverTools) chat.serverTools = offer.serverTools;
  return {
    chat,
    ignored: offer.withdrawn,
    passThroughBody: withoutWithdrawnTools(fields, offer.tools),
  };
}

/** The chat request of a Messages request: usage always asked of the upstream (message_delta carries it). */
function chatRequest(model: CatalogEntry, body: ChatRequestBody, checked: CheckedMessagesFields, priceOptions: PriceOptions | undefined): ChatRequest {
  const chat: ChatRequest = { model, body, stream: checked.stream === true, includeUsage: true, maxTokens: checked.max_tokens, maxTokensParam: 'max_tokens', choices: 1 };
  if (priceOptions) chat.priceOptions = priceOptions;
  return chat;
}

/** The client's body with the tools that stay on offer (all of them, unless server tools were withdrawn). */
function withoutWithdrawnTools(fields: Record<string, unknown>, tools: Record<string, unknown>[] | undefined): Record<string, unknown> {
  if (!Array.isArray(fields.tools) || fields.tools.length === (tools?.length ?? 0)) return fields;
  const { tools: _all, ...rest } = fields;
  return tools ? { ...rest, tools } : rest;
}

/** count_tokens: the same body as a message, max_tokens not needed; the same translation, so the same count. */
@Injectable()
export class CountTokensRequestPipe implements PipeTransform<unknown, CountTokensRequest> {
  constructor(
    private readonly catalog: CatalogService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  transform(body: unknown): CountTokensRequest {
    const { fields, model } = requestedChatModel(this.catalog, body);
    refuseUnservedFields(fields);
    checkedFields(checkCountTokensFields, fields);
    if (anthropicShare(this.config, model) === 'all') {
      if (!Array.isArray(fields.messages) || fields.messages.length === 0) throw invalidField('messages', 'messages must be a non-empty array of messages.');
      const offer = passThroughTools(fields.tools, model);
      passThroughToolChoice(fields.tool_choice, offer);
      return { model, messages: fields.messages, tools: offer.tools, ignored: offer.withdrawn, passThroughBody: withoutWithdrawnTools(fields, offer.tools) };
    }
    const offer = chatTools(fields.tools);
    chatToolChoice(fields.tool_choice, offer);
    return { model, messages: chatMessages(fields.system, fields.messages), tools: offer.tools, ignored: ignoredFields(fields, offer.withdrawn) };
  }
}

/** The scalar fields the pipe reads, as messagesCheckedFields has checked them (null: the default). */
interface CheckedMessagesFields {
  max_tokens: number;
  stream?: boolean | null;
  temperature?: number | null;
  top_p?: number | null;
}

/** The fields, once `check` passes them; a 400 naming the first field at fault otherwise (`Invalid top_k: …`, param `top_k`). */
function checkedFields<T>(check: BodyCheck, fields: Record<string, unknown>): T {
  const problem = check(fields);
  if (problem) throw invalidField(problem.path, `${problem.message}.`);
  return fields as T;
}

/** Copies the values that are set (not undefined or null) into the chat body. */
function setPresent(body: ChatRequestBody, values: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(values)) if (value !== undefined && value !== null) body[name] = value;
}
