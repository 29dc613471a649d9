import { ChatRequest } from '../chat/chat-request.pipe';
import { IgnoredParam } from '../chat/ignored-params';
import { pricedOptions } from '../chat/price-options-check';
import { isJsonObject } from '../common/json/scalar-fields';
import { CatalogEntry } from '../config/gateway-config.schema';
import { toolFee } from '../config/price-options';
import { invalidField, unsupportedField } from '../errors';
import { quotedClientText } from '../models/requested-model';
import { ChatRequestBody, ChatRequestMessage } from '../providers/chat-contract';
import { checkResponsesFields } from './dto/responses.schema';

/**
 * A Responses request for a model whose deployments are all `openai` (DESIGN.md section 12): the client's body goes
 * upstream as sent (`chat.passThrough`), and the chat request beside it serves the hold, the charge and the gateway's
 * own count; `ignored` names what the upstream does not get (`store: true`, withdrawn server tools).
 */
export interface ResponsesPassThroughRequest {
  passedThrough: true;
  chat: ChatRequest;
  ignored: IgnoredParam[];
}

/** The web search tool under its current and dated names: served when the entry prices `web_search` (DESIGN.md 12.2). */
const WEB_SEARCH = new Set(['web_search', 'web_search_preview', 'web_search_2025_08_26', 'web_search_preview_2025_03_11']);
/**
 * Tools OpenAI's platform runs and bills apart from tokens (files searched and stored, containers, images, remote MCP
 * servers): withdrawn, since the charge could not cover them. Tools the client runs itself (function, custom,
 * namespace, local_shell, computer, shell, apply_patch) and types the gateway does not know go as sent.
 */
const PLATFORM_TOOLS = new Set(['file_search', 'code_interpreter', 'image_generation', 'mcp', 'tool_search']);

/** The tools that stay on offer, those withdrawn (named in the header), and the priced server tools the hold covers. */
interface PassThroughOffer {
  tools: unknown[] | undefined;
  withdrawn: IgnoredParam[];
  withdrawnTypes: Set<string>;
  serverTools?: Record<string, number | null>;
}

/**
 * The checks a pass-through needs, and nothing more: the scalar fields the hold and the charge read (the route's own
 * schema), `input` present, a priced `service_tier` (DESIGN.md 12.2), and server tools served only when priced.
 * Everything else (reasoning items, `include`, `reasoning`, `text`, custom and namespace tools, unknown fields) is
 * the upstream's to judge. The fields that need state were refused before (responses-fields.ts).
 */
export function passedThrough(model: CatalogEntry, fields: Record<string, unknown>): ResponsesPassThroughRequest {
  const problem = checkResponsesFields(fields);
  if (problem) throw invalidField(problem.path, `${problem.message}.`);
  const checked = fields as { stream?: boolean | null; instructions?: string | null; max_output_tokens?: number | null };
  const priceOptions = pricedOptions(model, fields, ['service_tier']);
  const offer = passThroughTools(fields.tools, model, fields.max_tool_calls);
  refuseForcedWithdrawn(fields.tool_choice, offer);
  const sent = offer.withdrawn.length === 0 ? fields : withTools(fields, offer.tools);
  const chatBody: ChatRequestBody = { model: model.id, messages: countedMessages(checked.instructions, fields.input) };
  if (typeof checked.max_output_tokens === 'number') chatBody.max_completion_tokens = checked.max_output_tokens;
  if (offer.tools) chatBody.tools = offer.tools as ChatRequestBody['tools'];
  const chat: ChatRequest = {
    model,
    body: chatBody,
    stream: checked.stream === true,
    // A Response reports its usage at its end, always.
    includeUsage: true,
    maxTokens: checked.max_output_tokens ?? null,
    maxTokensParam: 'max_output_tokens',
    choices: 1,
    passThrough: { dialect: 'openai-responses', body: sent, headers: {} },
  };
  if (priceOptions) chat.priceOptions = priceOptions;
  if (offer.serverTools) chat.serverTools = offer.serverTools;
  return { passedThrough: true, chat, ignored: ignoredOf(fields, offer.withdrawn) };
}

/**
 * The request's input as chat messages for the gateway's own count, should the upstream report no usage: the
 * instructions as a system message, a string input as a user message, input items as sent (each counted as its
 * fields' text, encrypted reasoning included: the upstream reads it as input).
 */
function countedMessages(instructions: string | null | undefined, input: unknown): ChatRequestMessage[] {
  const messages: ChatRequestMessage[] = [];
  if (typeof instructions === 'string' && instructions !== '') messages.push({ role: 'system', content: instructions });
  if (typeof input === 'string') messages.push({ role: 'user', content: input });
  // One push per item: a spread of a body's worth of items would pass the engine's limit on arguments.
  else if (Array.isArray(input) && input.length > 0) for (const item of input) messages.push(item as ChatRequestMessage);
  else throw invalidField('input', 'input is required: a string, or a non-empty array of input items.');
  return messages;
}

function passThroughTools(tools: unknown, model: CatalogEntry, maxToolCalls: unknown): PassThroughOffer {
  const offer: PassThroughOffer = { tools: undefined, withdrawn: [], withdrawnTypes: new Set() };
  if (tools === undefined || tools === null) return offer;
  if (!Array.isArray(tools)) throw invalidField('tools', 'tools must be an array.');
  const kept = tools.filter((tool, i) => {
    if (!isJsonObject(tool)) throw invalidField(`tools[${i}]`, 'a tool must be an object.');
    const type = typeof tool.type === 'string' ? tool.type : '';
    if (WEB_SEARCH.has(type) && toolFee(model, 'web_search') !== undefined) {
      // OpenAI bounds the calls of built-in tools by max_tool_calls alone: the hold covers that many, else tool_hold_uses.
      const uses = typeof maxToolCalls === 'number' && Number.isSafeInteger(maxToolCalls) && maxToolCalls > 0 ? maxToolCalls : null;
      (offer.serverTools ??= {}).web_search = uses;
      return true;
    }
    if (!WEB_SEARCH.has(type) && !PLATFORM_TOOLS.has(type)) return true;
    offer.withdrawn.push({ name: `tools:${type}`, label: `tools:${type}` });
    offer.withdrawnTypes.add(type);
    return false;
  });
  offer.tools = kept.length === tools.length ? tools : kept.length > 0 ? kept : undefined;
  return offer;
}

/** A tool_choice that forces a withdrawn tool cannot be honoured: 400 (DESIGN.md section 11). */
function refuseForcedWithdrawn(choice: unknown, offer: PassThroughOffer): void {
  if (!isJsonObject(choice) || typeof choice.type !== 'string' || !offer.withdrawnTypes.has(choice.type)) return;
  throw unsupportedField('tool_choice', `tool_choice forces ${quotedClientText(choice.type)}, a tool OpenAI's platform runs and bills apart, which this gateway does not offer.`);
}

/** The client's body with the tools that stay on offer (none: no `tools` field). */
function withTools(fields: Record<string, unknown>, tools: unknown[] | undefined): Record<string, unknown> {
  const { tools: _all, ...rest } = fields;
  return tools ? { ...rest, tools } : rest;
}

/** What the upstream does not get, in request order: the withdrawn tools where `tools` stands, and a `store: true`. */
function ignoredOf(fields: Record<string, unknown>, withdrawn: IgnoredParam[]): IgnoredParam[] {
  const ignored: IgnoredParam[] = [];
  for (const name of Object.keys(fields)) {
    if (name === 'tools') ignored.push(...withdrawn);
    else if (name === 'store' && fields.store === true) ignored.push({ name: 'store', label: 'store' });
  }
  return ignored;
}
