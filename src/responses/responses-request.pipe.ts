import { Injectable, PipeTransform } from '@nestjs/common';
import { ChatRequest, requestedChatModel } from '../chat/chat-request.pipe';
import { IgnoredParam } from '../chat/ignored-params';
import { pricedOptions } from '../chat/price-options-check';
import { isJsonObject } from '../common/json/scalar-fields';
import { invalidField } from '../errors';
import { CatalogService } from '../models/catalog.service';
import { ChatRequestBody } from '../providers/upstream-provider';
import { checkResponsesFields } from './dto/responses.schema';
import { chatMessages } from './responses-input';
import { ignoredFields, refuseUnservedFields } from './responses-fields';
import { chatResponseFormat, chatToolChoice, chatTools, offeredToolLists, ToolShapes } from './responses-tools';

/** What OpenAI's Response repeats of its request. */
export interface ResponseEcho {
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, unknown>;
  parallel_tool_calls: boolean;
  temperature: number | null;
  top_p: number | null;
  text: { format: unknown };
  tool_choice: unknown;
  tools: unknown[];
  user?: string;
}

/** A Responses request that passed validation: the chat completion it is served by, what its answer echoes, the tools' shapes, and what is not used. */
export interface ResponsesRequest {
  chat: ChatRequest;
  echo: ResponseEcho;
  /** What each function offered upstream stands for, to answer its calls in the tool's own shape. */
  toolShapes: ToolShapes;
  ignored: IgnoredParam[];
}

/** OpenAI's limits on `metadata`: 16 pairs, keys up to 64 characters, values strings up to 512. */
const METADATA_PAIRS = 16;
const METADATA_KEY_LENGTH = 64;
const METADATA_VALUE_LENGTH = 512;

/**
 * Validates a Responses body in chat's order (model first, then the fields), refuses what needs server
 * state, translates what chat can serve into the chat completion, and names the rest as ignored (docs/responses.md).
 */
@Injectable()
export class ResponsesRequestPipe implements PipeTransform<unknown, ResponsesRequest> {
  constructor(private readonly catalog: CatalogService) {}

  transform(body: unknown): ResponsesRequest {
    const { fields, model } = requestedChatModel(this.catalog, body);
    refuseUnservedFields(fields);
    const problem = checkResponsesFields(fields);
    if (problem) throw invalidField(problem.path, `${problem.message}.`);
    const checked = fields as CheckedResponsesFields;
    checkMetadata(isJsonObject(fields.metadata) ? fields.metadata : null);
    // OpenAI's tier is the dialect's one price-changing option: a priced one goes to the chat body, as a chat client's would.
    const priceOptions = pricedOptions(model, fields, ['service_tier']);
    const chatBody: ChatRequestBody = { model: model.id, messages: chatMessages(checked.instructions, fields.input) };
    const offer = chatTools(offeredToolLists(fields.tools, fields.input));
    const toolChoice = chatToolChoice(fields.tool_choice, offer);
    const responseFormat = chatResponseFormat(fields.text);
    const reasoningEffort = isJsonObject(fields.reasoning) ? fields.reasoning.effort : undefined;
    setPresent(chatBody, {
      stream: checked.stream === true ? true : undefined,
      max_completion_tokens: checked.max_output_tokens,
      temperature: checked.temperature,
      top_p: checked.top_p,
      user: checked.user,
      tools: offer.tools,
      // Chat upstreams refuse both without tools (all of them may have been withdrawn).
      tool_choice: offer.tools ? toolChoice : undefined,
      parallel_tool_calls: offer.tools ? checked.parallel_tool_calls : undefined,
      response_format: responseFormat,
      reasoning_effort: typeof reasoningEffort === 'string' ? reasoningEffort : undefined,
      service_tier: priceOptions?.service_tier,
    });
    return {
      // Usage is always asked of the upstream: response.completed carries it.
      chat: {
        model, body: chatBody, stream: checked.stream === true, includeUsage: true, maxTokens: checked.max_output_tokens ?? null, maxTokensParam: 'max_output_tokens', choices: 1,
        ...(priceOptions && { priceOptions }),
      },
      echo: {
        instructions: checked.instructions ?? null,
        max_output_tokens: checked.max_output_tokens ?? null,
        metadata: (fields.metadata as Record<string, unknown> | null | undefined) ?? {},
        parallel_tool_calls: checked.parallel_tool_calls ?? true,
        temperature: checked.temperature ?? null,
        top_p: checked.top_p ?? null,
        text: { format: (fields.text as { format?: unknown } | null | undefined)?.format ?? { type: 'text' } },
        tool_choice: fields.tool_choice ?? 'auto',
        tools: (fields.tools as unknown[] | null | undefined) ?? [],
        ...(typeof checked.user === 'string' ? { user: checked.user } : {}),
      },
      toolShapes: offer.shapes,
      ignored: ignoredFields(fields, offer.withdrawn, priceOptions ? ['service_tier'] : []),
    };
  }
}

/** The scalar fields the pipe reads, as responsesCheckedFields has checked them (null: the default). */
interface CheckedResponsesFields {
  stream?: boolean | null;
  instructions?: string | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  parallel_tool_calls?: boolean | null;
  user?: string | null;
}

function checkMetadata(metadata: Record<string, unknown> | null): void {
  if (!metadata) return;
  const entries = Object.entries(metadata);
  if (entries.length > METADATA_PAIRS) throw invalidField('metadata', `metadata holds at most ${METADATA_PAIRS} pairs.`);
  for (const [key, value] of entries) {
    if (key.length > METADATA_KEY_LENGTH) throw invalidField('metadata', `metadata keys are at most ${METADATA_KEY_LENGTH} characters.`);
    if (typeof value !== 'string' || value.length > METADATA_VALUE_LENGTH) {
      throw invalidField('metadata', `metadata values are strings of at most ${METADATA_VALUE_LENGTH} characters.`);
    }
  }
}

/** Copies the values that are set (not undefined or null) into the chat body. */
function setPresent(body: ChatRequestBody, values: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(values)) if (value !== undefined && value !== null) body[name] = value;
}
