import { isJsonObject } from '../../common/json/scalar-fields';
import type { CatalogEntry } from '../../config/gateway-config.schema';
import { toolFee } from '../../config/price-options';
import { invalidField, unsupportedField } from '../../errors';
import type { ChatFunctionDefinition, ChatFunctionTool, ChatRequestBody } from '../chat-contract';
import { isObject, quoted } from './client-fields';
import type { CustomTool, MessagesRequestBody, MessagesTool, MessagesToolChoice, TypedTool } from './messages-wire';

const CLIENT_TYPED_TOOL = "Anthropic's typed client tools (bash, text editor, computer use, memory) are shaped for Claude's own training and reach Claude only through an anthropic upstream; send them as custom tools (name, description, input_schema) to this model.";

/** Anthropic's typed tools that the client runs itself: `bash_20250124`, `text_editor_20250728`, … */
const CLIENT_TYPED = /^(bash|text_editor|str_replace_editor|str_replace_based_edit_tool|computer|memory)_/;

/** Server tools (run by Anthropic) by family, the metric's labels for them; any other typed tool is counted as `tools:other`. */
const SERVER_TOOL_FAMILIES = new Set(['web_search', 'web_fetch', 'code_execution', 'tool_search_tool_regex', 'tool_search_tool_bm25', 'mcp_toolset']);
/**
 * The server tools whose uses Anthropic counts in the answer (`usage.server_tool_use.web_search_requests`,
 * `web_fetch_requests`), so that a per-use fee can be charged from it: the only ones a price can serve (DESIGN.md
 * section 12.2). Code execution is billed by container time, which no answer reports: it stays withdrawn.
 */
const COUNTED_SERVER_TOOLS = new Set(['web_search', 'web_fetch']);

/** A tool withdrawn from the offer: its name for `x-gateway-ignored-params` (`tools:web_search_20250305`), and its metric label (`tools:web_search`). */
export interface WithdrawnTool {
  name: string;
  label: string;
}

/**
 * The tools an upstream is offered (chat function tools when translated, Anthropic's as sent when passed through),
 * and those withdrawn from the offer because only Anthropic's platform runs them.
 */
export interface ToolOffer<T> {
  tools: T[] | undefined;
  withdrawn: WithdrawnTool[];
  /** The names of the withdrawn tools, which a tool_choice may not force. */
  withdrawnNames: Set<string>;
  /** The priced server tools served on pass-through, by family, with their `max_uses` (null: none set): the hold covers them. */
  serverTools?: Record<string, number | null>;
}

/**
 * Custom tools (`{name, description, input_schema}`) as chat function tools. Server tools (web search and fetch,
 * code execution, tool search: run by Anthropic) are withdrawn from the offer and named; Anthropic's typed client
 * tools are refused (DESIGN.md section 11).
 */
export function chatTools(tools: MessagesRequestBody['tools']): ToolOffer<ChatFunctionTool> {
  const offer: ToolOffer<ChatFunctionTool> = { tools: undefined, withdrawn: [], withdrawnNames: new Set() };
  if (tools === undefined || tools === null) return offer;
  if (!Array.isArray(tools)) throw invalidField('tools', 'tools must be an array.');
  const offered: ChatFunctionTool[] = [];
  tools.forEach((tool, i) => {
    const path = `tools[${i}]`;
    if (!isObject(tool)) throw invalidField(path, 'a tool must be an object.');
    if (!isCustom(tool)) {
      if (typeof tool.type !== 'string') throw invalidField(`${path}.type`, 'type must be a string.');
      if (CLIENT_TYPED.test(tool.type)) throw unsupportedField(`${path}.type`, `${quoted(tool.type)}: ${CLIENT_TYPED_TOOL}`);
      withdraw(offer, tool, serverToolFamily(tool.type));
      return;
    }
    if (typeof tool.name !== 'string' || tool.name === '') throw invalidField(`${path}.name`, 'name must be a non-empty string.');
    if (!isJsonObject(tool.input_schema)) throw invalidField(`${path}.input_schema`, 'input_schema must be a JSON Schema object.');
    const fn: ChatFunctionDefinition = { name: tool.name, parameters: tool.input_schema };
    if (typeof tool.description === 'string') fn.description = tool.description;
    if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
    offered.push({ type: 'function', function: fn });
  });
  if (offered.length > 0) offer.tools = offered;
  return offer;
}

/**
 * The tools of a request passed through to an `anthropic` upstream: as sent, typed client tools included. A server
 * tool whose uses Anthropic counts (web search, web fetch) and whose fee `model` prices (`tool_fees`) is served: it
 * stays in the body, and `serverTools` names it with its `max_uses` for the hold; the charge adds uses × fee from the
 * answer (DESIGN.md section 12.2). Every other server tool is withdrawn and named as on a translated upstream:
 * Anthropic bills its use apart from tokens, which the charge could not cover (docs/messages.md, "Pass-through").
 * Without a model (a model whose deployments are not all `anthropic`), none is served.
 */
export function passThroughTools(tools: MessagesRequestBody['tools'], model?: CatalogEntry): ToolOffer<MessagesTool> {
  const offer: ToolOffer<MessagesTool> = { tools: undefined, withdrawn: [], withdrawnNames: new Set() };
  if (tools === undefined || tools === null) return offer;
  if (!Array.isArray(tools)) throw invalidField('tools', 'tools must be an array.');
  const offered: MessagesTool[] = [];
  tools.forEach((tool, i) => {
    if (!isObject(tool)) throw invalidField(`tools[${i}]`, 'a tool must be an object.');
    if (!isCustom(tool) && typeof tool.type === 'string' && !CLIENT_TYPED.test(tool.type)) {
      const family = serverToolFamily(tool.type);
      if (model && COUNTED_SERVER_TOOLS.has(family) && toolFee(model, family) !== undefined) {
        servedTool(offer, family, tool.max_uses, i);
        offered.push(tool);
        return;
      }
      withdraw(offer, tool, family);
      return;
    }
    offered.push(tool);
  });
  if (offered.length > 0) offer.tools = offered;
  return offer;
}

function isCustom(tool: MessagesTool): tool is CustomTool {
  return tool.type === undefined || tool.type === null || tool.type === 'custom';
}

function withdraw(offer: ToolOffer<unknown>, tool: MessagesTool, family: string): void {
  offer.withdrawn.push({ name: `tools:${tool.type}`, label: `tools:${family}` });
  if (typeof tool.name === 'string') offer.withdrawnNames.add(tool.name);
}

/** A served server tool's family and `max_uses` (a positive whole number, or none); two of one family add up. */
function servedTool(offer: ToolOffer<MessagesTool>, family: string, maxUses: TypedTool['max_uses'], i: number): void {
  if (maxUses !== undefined && maxUses !== null && !(typeof maxUses === 'number' && Number.isSafeInteger(maxUses) && maxUses > 0)) {
    throw invalidField(`tools[${i}].max_uses`, 'max_uses must be a positive integer.');
  }
  const served = (offer.serverTools ??= {});
  const uses = typeof maxUses === 'number' ? maxUses : null;
  served[family] = family in served ? (served[family] === null || uses === null ? null : served[family]! + uses) : uses;
}

/** A passed-through tool_choice: as sent, unless it forces a withdrawn tool (400). */
export function passThroughToolChoice(choice: MessagesRequestBody['tool_choice'], offer: ToolOffer<unknown>): void {
  if (choice && isObject(choice)) refuseForcingWithdrawn(choice, offer);
}

/** `web_search_20250305` → `web_search`: the family a dated type belongs to, or `other`. */
function serverToolFamily(type: string): string {
  const family = type.replace(/_\d{8}$/, '');
  return SERVER_TOOL_FAMILIES.has(family) ? family : 'other';
}

/** `auto`, `any` (chat's `required`), `none`, or one tool by name; `disable_parallel_tool_use` as `parallel_tool_calls: false`. */
export function chatToolChoice(choice: MessagesRequestBody['tool_choice'], offer: ToolOffer<unknown>): Pick<ChatRequestBody, 'tool_choice' | 'parallel_tool_calls'> {
  if (choice === undefined || choice === null) return {};
  const hasTools = offer.tools !== undefined;
  if (isObject(choice)) refuseForcingWithdrawn(choice, offer);
  if (!isObject(choice)) throw invalidField('tool_choice', 'tool_choice must be an object: {"type": "auto" | "any" | "tool" | "none"}.');
  const disable: unknown = 'disable_parallel_tool_use' in choice ? choice.disable_parallel_tool_use : undefined;
  if (disable !== undefined && disable !== null && typeof disable !== 'boolean') throw invalidField('tool_choice.disable_parallel_tool_use', 'disable_parallel_tool_use must be a boolean.');
  // Chat upstreams refuse parallel_tool_calls without tools.
  const parallel = hasTools && disable === true ? { parallel_tool_calls: false } : {};
  switch (choice.type) {
    case 'auto':
      return hasTools ? { tool_choice: 'auto', ...parallel } : {};
    case 'none':
      return hasTools ? { tool_choice: 'none' } : {};
    case 'any':
      if (!hasTools) throw invalidField('tool_choice', 'tool_choice any needs tools.');
      return { tool_choice: 'required', ...parallel };
    case 'tool':
      if (typeof choice.name !== 'string' || choice.name === '') throw invalidField('tool_choice.name', 'name must be a non-empty string.');
      if (!hasTools) throw invalidField('tool_choice', 'tool_choice tool needs tools.');
      return { tool_choice: { type: 'function', function: { name: choice.name } }, ...parallel };
    default:
      throw invalidField('tool_choice.type', 'type must be auto, any, tool or none.');
  }
}

/** A tool_choice that forces a withdrawn server tool, or any tool when all were withdrawn, cannot be honoured: 400. */
function refuseForcingWithdrawn(choice: MessagesToolChoice, offer: ToolOffer<unknown>): void {
  const why = 'it forces a tool that only Anthropic\'s platform runs, withdrawn from the offer to this model (see x-gateway-ignored-params).';
  if (choice.type === 'tool' && typeof choice.name === 'string' && offer.withdrawnNames.has(choice.name)) throw unsupportedField('tool_choice', why);
  if (choice.type === 'any' && offer.tools === undefined && offer.withdrawn.length > 0) throw unsupportedField('tool_choice', why);
}

/** `stop_sequences` as chat's `stop`; undefined when there are none. */
export function chatStop(stopSequences: MessagesRequestBody['stop_sequences']): string[] | undefined {
  if (stopSequences === undefined || stopSequences === null) return undefined;
  if (!Array.isArray(stopSequences)) throw invalidField('stop_sequences', 'stop_sequences must be an array of strings.');
  const at = stopSequences.findIndex((s: unknown) => typeof s !== 'string' || s === '');
  if (at >= 0) throw invalidField(`stop_sequences[${at}]`, 'a stop sequence must be a non-empty string.');
  return stopSequences.length > 0 ? stopSequences : undefined;
}

/** `metadata.user_id` as chat's `user`; Anthropic's metadata has no other field. */
export function chatUser(metadata: MessagesRequestBody['metadata']): string | undefined {
  if (metadata === undefined || metadata === null) return undefined;
  if (!isObject(metadata)) throw invalidField('metadata', 'metadata must be an object.');
  const other = Object.keys(metadata).find((key) => key !== 'user_id');
  if (other !== undefined) throw invalidField('metadata', `metadata has one field, user_id; ${quoted(other)} is not one.`);
  const user: unknown = metadata.user_id;
  if (user === undefined || user === null) return undefined;
  if (typeof user !== 'string') throw invalidField('metadata.user_id', 'user_id must be a string.');
  return user;
}
