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
import { deploymentShare } from '../providers/deployment-share';
import { chatMessagesOf } from '../providers/anthropic/messages-to-chat';
import { chatStop, chatToolChoice, chatTools, chatUser, passThroughToolChoice, passThroughTools } from '../providers/anthropic/messages-tools';
import type { MessageParam, MessagesRequestBody, MessagesTool } from '../providers/anthropic/messages-wire';
import type { ChatRequestBody, ChatRequestMessage, ChatTool } from '../providers/chat-contract';
import { checkCountTokensFields, checkMessagesFields, MAX_TOKENS_REQUIRED } from './dto/messages.schema';
import { ignoredFields, refuseUnservedFields } from './messages-fields';

/** What count_tokens counts: the chat messages and tool definitions the request would send upstream. */
export interface CountTokensRequest {
  model: CatalogEntry;
  /** Chat's messages and tools, or Anthropic's as sent for a body passed through. */
  messages: ChatRequestMessage[] | MessageParam[];
  tools: ChatTool[] | MessagesTool[] | undefined;
  ignored: IgnoredParam[];
  /** The body to send to the model's `anthropic` upstream, whose own count answers (DESIGN.md section 11). */
  passThroughBody?: MessagesRequestBody;
}

/** A Messages request that passed validation: the chat completion that serves it, and what it asked for that is not used. */
export interface MessagesRequest {
  chat: ChatRequest;
  ignored: IgnoredParam[];
  /**
   * The body as it goes to the model's `anthropic` deployments (passed through: DESIGN.md section 11), when it
   * has some; the controller adds the client's anthropic-* headers.
   */
  passThroughBody?: MessagesRequestBody;
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
    const request = asMessagesBody(fields);
    refuseUnservedFields(request);
    if (request.max_tokens === undefined || request.max_tokens === null) throw invalidField('max_tokens', MAX_TOKENS_REQUIRED);
    checkFields(checkMessagesFields, request);
    const checked = request as CheckedMessagesFields;
    // Tier, speed and region change the price (DESIGN.md section 12.2): refused unless priced, on either path.
    const asked = pricedOptions(model, request);
    const share = deploymentShare(this.config, model, 'anthropic');
    if (share === 'all') return passedThrough(model, request, checked, asked);
    const passThroughBody = share === 'some' ? withoutWithdrawnTools(request, passThroughTools(request.tools).tools) : undefined;
    const chatBody: ChatRequestBody = { model: model.id, messages: chatMessagesOf(request.system, request.messages) };
    const offer = chatTools(request.tools);
    // A priced tier is chat's own field too, for the upstreams that read it; speed and inference_geo are Anthropic's
    // alone, and a chat body never reaches Anthropic from here (its deployments take the pass-through body).
    const tier = asked?.service_tier;
    setPresent(chatBody, {
      stream: checked.stream === true ? true : undefined,
      max_completion_tokens: checked.max_tokens,
      temperature: checked.temperature,
      top_p: checked.top_p,
      stop: chatStop(request.stop_sequences),
      user: chatUser(request.metadata),
      tools: offer.tools,
      ...chatToolChoice(request.tool_choice, offer),
      service_tier: tier,
    });
    // Served by pass-through on some deployments, every option asked for may apply; translated only, the tier alone.
    const priceOptions = share === 'some' ? asked : tier === undefined ? undefined : { service_tier: tier };
    return {
      chat: chatRequest(model, chatBody, checked, priceOptions),
      ignored: ignoredFields(request, offer.withdrawn, tier === undefined ? [] : ['service_tier'], model.upstream_api === 'responses' ? ['stop_sequences'] : []),
      passThroughBody,
    };
  }
}

/**
 * A model served only by `anthropic` upstreams: the body goes as sent (DESIGN.md section 11), checked only where
 * the hold and the charge read it (model, max_tokens, stream, messages); server tools are withdrawn (named in the
 * header: their use is billed by Anthropic apart from tokens) unless the model prices them (providers/anthropic/
 * messages-tools.ts: served, and named in `serverTools` for the hold).
 */
function passedThrough(model: CatalogEntry, request: MessagesRequestBody, checked: CheckedMessagesFields, priceOptions: PriceOptions | undefined): MessagesRequest {
  if (!Array.isArray(request.messages) || request.messages.length === 0) throw invalidField('messages', 'messages must be a non-empty array of messages.');
  const offer = passThroughTools(request.tools, model);
  passThroughToolChoice(request.tool_choice, offer);
  const chat = chatRequest(model, countedView(model, request.messages, offer.tools, checked.max_tokens), checked, priceOptions);
  if (offer.serverTools) chat.serverTools = offer.serverTools;
  return {
    chat,
    ignored: offer.withdrawn,
    passThroughBody: withoutWithdrawnTools(request, offer.tools),
  };
}

/**
 * The chat view of a body that every deployment passes through: never sent, only counted (the hold's bound, and the
 * gateway's own count should the upstream report no usage), and the count reads a message's fields and the tools as
 * text in any dialect. So they stay Anthropic's, as sent: the one place where the chat body holds another dialect.
 */
function countedView(model: CatalogEntry, messages: MessageParam[], tools: MessagesTool[] | undefined, maxTokens: number): ChatRequestBody {
  const view: ChatRequestBody = { model: model.id, messages: messages as unknown as ChatRequestMessage[], max_completion_tokens: maxTokens };
  if (tools) view.tools = tools as unknown as ChatTool[];
  return view;
}

/** The chat request of a Messages request: usage always asked of the upstream (message_delta carries it). */
function chatRequest(model: CatalogEntry, body: ChatRequestBody, checked: CheckedMessagesFields, priceOptions: PriceOptions | undefined): ChatRequest {
  const chat: ChatRequest = { model, body, stream: checked.stream === true, includeUsage: true, maxTokens: checked.max_tokens, maxTokensParam: 'max_tokens', choices: 1 };
  if (priceOptions) chat.priceOptions = priceOptions;
  return chat;
}

/** The client's body with the tools that stay on offer (all of them, unless server tools were withdrawn). */
function withoutWithdrawnTools(request: MessagesRequestBody, tools: MessagesTool[] | undefined): MessagesRequestBody {
  if (!Array.isArray(request.tools) || request.tools.length === (tools?.length ?? 0)) return request;
  const { tools: _all, ...rest } = request;
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
    const request = asMessagesBody(fields);
    refuseUnservedFields(request);
    checkFields(checkCountTokensFields, request);
    if (deploymentShare(this.config, model, 'anthropic') === 'all') {
      if (!Array.isArray(request.messages) || request.messages.length === 0) throw invalidField('messages', 'messages must be a non-empty array of messages.');
      const offer = passThroughTools(request.tools, model);
      passThroughToolChoice(request.tool_choice, offer);
      return { model, messages: request.messages, tools: offer.tools, ignored: offer.withdrawn, passThroughBody: withoutWithdrawnTools(request, offer.tools) };
    }
    const offer = chatTools(request.tools);
    chatToolChoice(request.tool_choice, offer);
    return { model, messages: chatMessagesOf(request.system, request.messages), tools: offer.tools, ignored: ignoredFields(request, offer.withdrawn) };
  }
}

/**
 * The client's JSON object as the Messages request it claims to be: only `model` is checked so far, and every other
 * field is checked where it is read (the scalars by the schema, the rest as they are translated or passed through).
 */
function asMessagesBody(fields: Record<string, unknown>): MessagesRequestBody {
  return fields as MessagesRequestBody;
}

/** The scalar fields the pipe reads, as messagesCheckedFields has checked them (null: the default). */
interface CheckedMessagesFields {
  max_tokens: number;
  stream?: boolean | null;
  temperature?: number | null;
  top_p?: number | null;
}

/** A 400 naming the first field at fault when `check` does not pass the body (`Invalid top_k: …`, param `top_k`). */
function checkFields(check: BodyCheck, request: MessagesRequestBody): void {
  const problem = check(request);
  if (problem) throw invalidField(problem.path, `${problem.message}.`);
}

/** Copies the values that are set (not undefined or null) into the chat body, in their order. */
function setPresent(body: ChatRequestBody, values: Partial<ChatRequestBody>): void {
  for (const [name, value] of Object.entries(values)) if (value !== undefined && value !== null) body[name] = value;
}
