import { isJsonObject } from '../common/json/scalar-fields';
import { quotedClientText } from '../models/requested-model';
import { invalidField, unsupportedField } from '../errors';

const SERVER_TOOL = "tools that Anthropic defines (web search and fetch, code execution, bash, text editor, computer use, memory) run on or are shaped for Anthropic's platform; only custom tools (name, description, input_schema) are served.";

/** Custom tools (`{name, description, input_schema}`) as chat function tools; a tool with another `type` is refused. */
export function chatTools(tools: unknown): Record<string, unknown>[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw invalidField('tools', 'tools must be an array.');
  if (tools.length === 0) return undefined;
  return tools.map((tool, i) => {
    const path = `tools[${i}]`;
    if (!isJsonObject(tool)) throw invalidField(path, 'a tool must be an object.');
    if (tool.type !== undefined && tool.type !== null && tool.type !== 'custom') {
      throw unsupportedField(`${path}.type`, `${typeof tool.type === 'string' ? quotedClientText(tool.type) : 'this tool'}: ${SERVER_TOOL}`);
    }
    if (typeof tool.name !== 'string' || tool.name === '') throw invalidField(`${path}.name`, 'name must be a non-empty string.');
    if (!isJsonObject(tool.input_schema)) throw invalidField(`${path}.input_schema`, 'input_schema must be a JSON Schema object.');
    const fn: Record<string, unknown> = { name: tool.name, parameters: tool.input_schema };
    if (typeof tool.description === 'string') fn.description = tool.description;
    if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
    return { type: 'function', function: fn };
  });
}

export interface ChatToolChoice {
  tool_choice?: unknown;
  parallel_tool_calls?: boolean;
}

/** `auto`, `any` (chat's `required`), `none`, or one tool by name; `disable_parallel_tool_use` as `parallel_tool_calls: false`. */
export function chatToolChoice(choice: unknown, hasTools: boolean): ChatToolChoice {
  if (choice === undefined || choice === null) return {};
  if (!isJsonObject(choice)) throw invalidField('tool_choice', 'tool_choice must be an object: {"type": "auto" | "any" | "tool" | "none"}.');
  const disable = choice.disable_parallel_tool_use;
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

/** `stop_sequences` as chat's `stop`; undefined when there are none. */
export function chatStop(stopSequences: unknown): string[] | undefined {
  if (stopSequences === undefined || stopSequences === null) return undefined;
  if (!Array.isArray(stopSequences)) throw invalidField('stop_sequences', 'stop_sequences must be an array of strings.');
  const at = stopSequences.findIndex((s) => typeof s !== 'string' || s === '');
  if (at >= 0) throw invalidField(`stop_sequences[${at}]`, 'a stop sequence must be a non-empty string.');
  return stopSequences.length > 0 ? (stopSequences as string[]) : undefined;
}

/** `metadata.user_id` as chat's `user`; Anthropic's metadata has no other field. */
export function chatUser(metadata: unknown): string | undefined {
  if (metadata === undefined || metadata === null) return undefined;
  if (!isJsonObject(metadata)) throw invalidField('metadata', 'metadata must be an object.');
  const other = Object.keys(metadata).find((key) => key !== 'user_id');
  if (other !== undefined) throw invalidField('metadata', `metadata has one field, user_id; ${quotedClientText(other)} is not one.`);
  const user = metadata.user_id;
  if (user === undefined || user === null) return undefined;
  if (typeof user !== 'string') throw invalidField('metadata.user_id', 'user_id must be a string.');
  return user;
}
