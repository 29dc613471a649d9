import { Injectable, PipeTransform } from '@nestjs/common';
import { ErrorCode, GatewayError } from '../errors';
import { isJsonObject, scalarFields } from '../common/json/scalar-fields';
import { validatedDto } from '../common/validation/validated-dto';
import { CatalogEntry } from '../config/gateway-config.schema';
import { CatalogService } from '../models/catalog.service';
import { quotedModel, readRequestedModel } from '../models/requested-model';
import { ChatRequestBody } from '../providers/upstream-provider';
import { ChatCompletionRequestDto, VALIDATED_CHAT_FIELDS } from './dto/chat-completion-request.dto';

/** A chat request that passed validation, with its catalog model and the original body. */
export interface ChatRequest {
  model: CatalogEntry;
  /** The client's body as sent (unknown fields included). */
  body: ChatRequestBody;
  stream: boolean;
  includeUsage: boolean;
  /** max_completion_tokens or max_tokens, when the client set one. */
  maxTokens: number | null;
  choices: number;
}

/** Validates the parsed JSON body: codes of SPEC.md and DESIGN.md section 5, in that order. */
@Injectable()
export class ChatRequestPipe implements PipeTransform<unknown, ChatRequest> {
  constructor(private readonly catalog: CatalogService) {}

  transform(body: unknown): ChatRequest {
    const { fields, model } = requestedChatModel(this.catalog, body);
    checkMessages(fields.messages);
    const dto = validatedDto(ChatCompletionRequestDto, validatedPart(fields));
    return {
      model,
      body: fields as ChatRequestBody,
      stream: dto.stream === true,
      includeUsage: dto.stream_options?.include_usage === true,
      maxTokens: dto.max_completion_tokens ?? dto.max_tokens ?? null,
      choices: dto.n ?? 1,
    };
  }
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

/** Every message an object with a string role; what else a message holds is the upstream's to judge. */
function checkMessages(messages: unknown): void {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new GatewayError(ErrorCode.InvalidRequest, 'Invalid messages: messages must be a non-empty array.', 'messages');
  }
  const at = messages.findIndex((m: unknown) => !isJsonObject(m) || typeof m.role !== 'string');
  if (at >= 0) {
    throw new GatewayError(ErrorCode.InvalidRequest, `Invalid messages[${at}]: a message must be an object with a string role.`, `messages[${at}].role`);
  }
}

/**
 * What the DTO checks, and nothing else: the rest of the body (messages, tools, response formats:
 * often most of it) passes through to the upstream without being copied into DTO objects. Nested
 * values the DTO does not describe are emptied (scalarFields): class-transformer's copy of an object
 * costs time quadratic in its keys, and a key named "constructor" breaks it.
 */
function validatedPart(fields: Record<string, unknown>): Record<string, unknown> {
  const part = scalarFields(fields, VALIDATED_CHAT_FIELDS);
  if (isJsonObject(fields.stream_options)) part.stream_options = scalarFields(fields.stream_options, ['include_usage']);
  return part;
}
