import { Injectable, PipeTransform } from '@nestjs/common';
import { ChatRequest, requestedChatModel } from '../chat/chat-request.pipe';
import { IgnoredParam } from '../chat/ignored-params';
import { BodyCheck } from '../common/validation/compiled-body';
import { CatalogEntry } from '../config/gateway-config.schema';
import { invalidField } from '../errors';
import { CatalogService } from '../models/catalog.service';
import { ChatRequestBody } from '../providers/upstream-provider';
import { checkCountTokensFields, checkMessagesFields, MAX_TOKENS_REQUIRED } from './dto/messages.schema';
import { chatMessages, ChatMessage } from './messages-input';
import { ignoredFields, refuseUnservedFields } from './messages-fields';
import { chatStop, chatToolChoice, chatTools, chatUser } from './messages-tools';

/** What count_tokens counts: the chat messages and tool definitions the request would send upstream. */
export interface CountTokensRequest {
  model: CatalogEntry;
  messages: ChatMessage[];
  tools: Record<string, unknown>[] | undefined;
  ignored: IgnoredParam[];
}

/** A Messages request that passed validation: the chat completion that serves it, and what it asked for that is not used. */
export interface MessagesRequest {
  chat: ChatRequest;
  ignored: IgnoredParam[];
}

/**
 * Validates a Messages body in chat's order (model first, then the fields), refuses what needs Anthropic's
 * platform, translates what chat can serve into the chat completion, and names the rest as ignored (docs/messages.md).
 */
@Injectable()
export class MessagesRequestPipe implements PipeTransform<unknown, MessagesRequest> {
  constructor(private readonly catalog: CatalogService) {}

  transform(body: unknown): MessagesRequest {
    const { fields, model } = requestedChatModel(this.catalog, body);
    refuseUnservedFields(fields);
    if (fields.max_tokens === undefined || fields.max_tokens === null) throw invalidField('max_tokens', MAX_TOKENS_REQUIRED);
    const checked = checkedFields<CheckedMessagesFields>(checkMessagesFields, fields);
    const chatBody: ChatRequestBody = { model: model.id, messages: chatMessages(fields.system, fields.messages) };
    const offer = chatTools(fields.tools);
    setPresent(chatBody, {
      stream: checked.stream === true ? true : undefined,
      max_completion_tokens: checked.max_tokens,
      temperature: checked.temperature,
      top_p: checked.top_p,
      stop: chatStop(fields.stop_sequences),
      user: chatUser(fields.metadata),
      tools: offer.tools,
      ...chatToolChoice(fields.tool_choice, offer),
    });
    return {
      // Usage is always asked of the upstream: message_delta carries it.
      chat: { model, body: chatBody, stream: checked.stream === true, includeUsage: true, maxTokens: checked.max_tokens, maxTokensParam: 'max_tokens', choices: 1 },
      ignored: ignoredFields(fields, offer.withdrawn),
    };
  }
}

/** count_tokens: the same body as a message, max_tokens not needed; the same translation, so the same count. */
@Injectable()
export class CountTokensRequestPipe implements PipeTransform<unknown, CountTokensRequest> {
  constructor(private readonly catalog: CatalogService) {}

  transform(body: unknown): CountTokensRequest {
    const { fields, model } = requestedChatModel(this.catalog, body);
    refuseUnservedFields(fields);
    checkedFields(checkCountTokensFields, fields);
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
