import { Injectable, PipeTransform } from '@nestjs/common';
import { ErrorCode, GatewayError } from '../errors';
import { isJsonObject } from '../common/json/scalar-fields';
import { BodyProblem } from '../common/validation/compiled-body';
import { CatalogEntry } from '../config/gateway-config.schema';
import { CatalogService } from '../models/catalog.service';
import { quotedModel, readRequestedModel } from '../models/requested-model';
import { ChatRequestBody, PassThrough } from '../providers/upstream-provider';
import { checkChatCompletionBody } from './dto/chat-completion.schema';

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
}

/** Validates the parsed JSON body: codes of SPEC.md and DESIGN.md section 5, in that order. */
@Injectable()
export class ChatRequestPipe implements PipeTransform<unknown, ChatRequest> {
  constructor(private readonly catalog: CatalogService) {}

  transform(body: unknown): ChatRequest {
    const { fields, model } = requestedChatModel(this.catalog, body);
    const problem = checkChatCompletionBody(fields);
    if (problem) throw chatBodyError(problem);
    const checked = fields as CheckedChatFields;
    return {
      model,
      body: fields as ChatRequestBody,
      stream: checked.stream === true,
      includeUsage: isJsonObject(checked.stream_options) && checked.stream_options.include_usage === true,
      maxTokens: checked.max_completion_tokens ?? checked.max_tokens ?? null,
      maxTokensParam: checked.max_completion_tokens == null && checked.max_tokens != null ? 'max_tokens' : 'max_completion_tokens',
      choices: checked.n ?? 1,
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

/** The fields the pipe reads, as chatCompletionBody has checked them (null: the default). */
interface CheckedChatFields {
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean | null } | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  n?: number | null;
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
