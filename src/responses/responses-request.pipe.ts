import { Inject, Injectable, PipeTransform } from '@nestjs/common';
import { ChatRequest, requestedChatModel } from '../chat/chat-request.pipe';
import { IgnoredParam } from '../chat/ignored-params';
import { pricedOptions } from '../chat/price-options-check';
import { isJsonObject } from '../common/json/scalar-fields';
import { GATEWAY_CONFIG } from '../config/config.tokens';
import { GatewayConfig } from '../config/gateway-config.schema';
import { invalidField } from '../errors';
import { CatalogService } from '../models/catalog.service';
import { deploymentShare } from '../providers/deployment-share';
import { ChatRequestBody } from '../providers/chat-contract';
import type { ResponsesRequest as ResponsesBody, ResponsesTextFormat, ResponsesTool, ResponsesToolChoice } from '../providers/openai/responses-wire';
import { checkResponsesFields } from './dto/responses.schema';
import { chatMessages } from './responses-input';
import { ignoredFields, refuseUnservedFields } from './responses-fields';
import { passedThrough, ResponsesPassThroughRequest } from './responses-pass-through';
import { chatResponseFormat, chatToolChoice, chatTools, offeredToolLists, ToolShapes } from './responses-tools';

/** What OpenAI's Response repeats of its request. */
export interface ResponseEcho {
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  parallel_tool_calls: boolean;
  temperature: number | null;
  top_p: number | null;
  text: { format: ResponsesTextFormat };
  tool_choice: ResponsesToolChoice;
  tools: ResponsesTool[];
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
export class ResponsesRequestPipe implements PipeTransform<unknown, ResponsesRequest | ResponsesPassThroughRequest> {
  constructor(
    private readonly catalog: CatalogService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  transform(body: unknown): ResponsesRequest | ResponsesPassThroughRequest {
    const { fields, model } = requestedChatModel(this.catalog, body);
    refuseUnservedFields(fields);
    // Served by `openai` upstreams only: the body goes as sent (DESIGN.md section 12). A model that mixes types is
    // translated on every deployment, so that all of them answer alike.
    if (deploymentShare(this.config, model, 'openai') === 'all') return passedThrough(model, fields);
    const problem = checkResponsesFields(fields);
    if (problem) throw invalidField(problem.path, `${problem.message}.`);
    // The schema has checked the scalar fields and that metadata, text and reasoning are objects; input items and
    // tools are checked as they are translated.
    const checked = fields as ResponsesBody;
    checkMetadata(checked.metadata);
    // OpenAI's tier is the dialect's one price-changing option: a priced one goes to the chat body, as a chat client's would.
    const priceOptions = pricedOptions(model, fields, ['service_tier']);
    const chatBody: ChatRequestBody = { model: model.id, messages: chatMessages(checked.instructions, checked.input) };
    const offer = chatTools(offeredToolLists(checked.tools, checked.input));
    const toolChoice = chatToolChoice(checked.tool_choice, offer);
    const responseFormat = chatResponseFormat(checked.text);
    const reasoningEffort: unknown = checked.reasoning?.effort;
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
        metadata: checked.metadata ?? {},
        parallel_tool_calls: checked.parallel_tool_calls ?? true,
        temperature: checked.temperature ?? null,
        top_p: checked.top_p ?? null,
        text: { format: checked.text?.format ?? { type: 'text' } },
        tool_choice: checked.tool_choice ?? 'auto',
        tools: checked.tools ?? [],
        ...(typeof checked.user === 'string' ? { user: checked.user } : {}),
      },
      toolShapes: offer.shapes,
      ignored: ignoredFields(checked, offer.withdrawn, priceOptions ? ['service_tier'] : []),
    };
  }
}

function checkMetadata(metadata: ResponsesBody['metadata']): void {
  if (!isJsonObject(metadata)) return;
  // Values are checked: a client may send any JSON.
  const entries = Object.entries<unknown>(metadata);
  if (entries.length > METADATA_PAIRS) throw invalidField('metadata', `metadata holds at most ${METADATA_PAIRS} pairs.`);
  for (const [key, value] of entries) {
    if (key.length > METADATA_KEY_LENGTH) throw invalidField('metadata', `metadata keys are at most ${METADATA_KEY_LENGTH} characters.`);
    if (typeof value !== 'string' || value.length > METADATA_VALUE_LENGTH) {
      throw invalidField('metadata', `metadata values are strings of at most ${METADATA_VALUE_LENGTH} characters.`);
    }
  }
}

/** The options of the chat body that a Responses request sets; null or undefined where it leaves them to the default. */
type ChatOptions = {
  [name in 'stream' | 'max_completion_tokens' | 'temperature' | 'top_p' | 'user' | 'tools' | 'tool_choice' | 'parallel_tool_calls' | 'response_format' | 'reasoning_effort' | 'service_tier']?: ChatRequestBody[name] | null;
};

/** Copies the values that are set (not undefined or null) into the chat body. */
function setPresent(body: ChatRequestBody, values: ChatOptions): void {
  for (const [name, value] of Object.entries(values)) if (value !== undefined && value !== null) body[name] = value;
}
