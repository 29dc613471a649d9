import { IgnoredParam } from '../chat/ignored-params';
import { isJsonObject } from '../common/json/scalar-fields';
import { quotedClientText } from '../models/requested-model';
import { invalidField, unsupportedField } from '../errors';
import { ChatFunctionDefinition, ChatFunctionTool, ChatResponseFormat, ChatToolChoice } from '../providers/chat-contract';
import type {
  ResponsesCustomTool,
  ResponsesFunctionTool,
  ResponsesNamespaceTool,
  ResponsesRequest,
  ResponsesTextConfig,
  ResponsesTool,
  ResponsesToolChoice,
} from '../providers/openai/responses-wire';

const BUILT_IN = "built-in tools run on OpenAI's platform, not on chat-completion upstreams";

/**
 * How a tool the client runs itself is offered to a chat upstream, and how the upstream's call of it is
 * answered: a function as it is, a custom tool as a function of one string `input`, a tool of a group
 * (`namespace`) as a function named `group__tool`, the local shell as a function of its exec action.
 */
export interface ToolShape {
  kind: 'function' | 'custom' | 'local_shell';
  /** The tool's own name (within its group). */
  name: string;
  namespace?: string;
}

/** The chat function names offered upstream, each with the tool it stands for. */
export type ToolShapes = Map<string, ToolShape>;

/** The tools a chat upstream is offered, and those withdrawn from the offer because only OpenAI's platform runs them. */
export interface ResponsesToolOffer {
  tools: ChatFunctionTool[] | undefined;
  shapes: ToolShapes;
  withdrawn: IgnoredParam[];
  /** The types of the withdrawn tools, which a tool_choice may not force. */
  withdrawnTypes: Set<string>;
}

/** Built-in tools by type: the metric's labels for withdrawn tools (any other type is counted as `tools:other`). */
const BUILT_IN_TYPES = new Set<string>([
  'web_search', 'web_search_preview', 'web_search_2025_08_26', 'web_search_preview_2025_03_11', 'file_search', 'code_interpreter',
  'image_generation', 'mcp', 'computer', 'computer_use_preview', 'tool_search', 'shell', 'apply_patch',
]);

/** The group and tool separator of flattened names: chat function names allow `[A-Za-z0-9_-]` only. */
const GROUP_SEPARATOR = '__';

/** The chat function name of a tool: its name, or `group__name` for a tool of a group. */
export function chatToolName(name: string, namespace?: string | null): string {
  return typeof namespace === 'string' && namespace !== '' ? `${namespace}${GROUP_SEPARATOR}${name}` : name;
}

/** A custom tool's free-form input, as the one parameter of the function that stands for it. */
const CUSTOM_INPUT_SCHEMA = {
  type: 'object',
  properties: { input: { type: 'string', description: 'The whole input of the tool, as free-form text.' } },
  required: ['input'],
  additionalProperties: false,
};

/** The local shell's exec action (Codex's `local_shell`), as the parameters of the function that stands for it. */
const LOCAL_SHELL_SCHEMA = {
  type: 'object',
  properties: {
    command: { type: 'array', items: { type: 'string' }, description: 'The command and its arguments, e.g. ["bash", "-lc", "ls"].' },
    workdir: { type: 'string', description: 'The working directory.' },
    timeout_ms: { type: 'integer', description: 'The most time the command may take, in milliseconds.' },
  },
  required: ['command'],
  additionalProperties: false,
};
const LOCAL_SHELL_DESCRIPTION = 'Runs a command in a local shell and returns its output.';

/** The arguments of the `local_shell` function, as LOCAL_SHELL_SCHEMA describes them. */
export interface LocalShellArguments {
  command: string[];
  workdir?: string;
  timeout_ms?: number;
}

/** A list of tools the request offers, and where it stands in the body (`tools`, `input[0].tools`). */
interface ToolList {
  tools: ResponsesTool[];
  path: string;
}

/**
 * Every list of tools a Responses request offers: `tools`, then the `tools` of each `additional_tools` input item
 * (Codex's way of offering the tools it runs itself, DESIGN.md section 12.3), in input order.
 */
export function offeredToolLists(tools: ResponsesRequest['tools'], input: ResponsesRequest['input']): ToolList[] {
  const lists: ToolList[] = [];
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) throw invalidField('tools', 'tools must be an array.');
    lists.push({ tools, path: 'tools' });
  }
  if (!Array.isArray(input)) return lists;
  input.forEach((item, i) => {
    if (!isJsonObject(item) || item.type !== ADDITIONAL_TOOLS) return;
    if (!Array.isArray(item.tools)) throw invalidField(`input[${i}].tools`, 'an additional_tools item holds its tools in an array.');
    lists.push({ tools: item.tools, path: `input[${i}].tools` });
  });
  return lists;
}

/** The input item that offers tools (Codex 0.171.0): `{type: "additional_tools", role, tools}`. */
export const ADDITIONAL_TOOLS = 'additional_tools' as const;

/**
 * Responses tools, wherever offered (offeredToolLists), as chat function tools (DESIGN.md section 11): functions
 * as they are, custom tools, tool groups and the local shell in the shapes above; built-in tools, which OpenAI's
 * platform runs, are withdrawn from the offer and named.
 */
export function chatTools(lists: ToolList[]): ResponsesToolOffer {
  const offer: ResponsesToolOffer = { tools: undefined, shapes: new Map(), withdrawn: [], withdrawnTypes: new Set() };
  const offered: ChatFunctionTool[] = [];
  const add = (fn: ChatFunctionDefinition, shape: ToolShape, path: string) => {
    const chatName = fn.name;
    if (offer.shapes.has(chatName)) throw invalidField(`${path}.name`, `tool names must be unique; ${quotedClientText(chatName)} is offered twice.`);
    offer.shapes.set(chatName, shape);
    offered.push({ type: 'function', function: fn });
  };
  for (const { tools, path: listPath } of lists) addTools(offer, tools, listPath, add);
  if (offered.length > 0) offer.tools = offered;
  return offer;
}

type AddTool = (fn: ChatFunctionDefinition, shape: ToolShape, path: string) => void;

function addTools(offer: ResponsesToolOffer, tools: ResponsesTool[], listPath: string, add: AddTool): void {
  tools.forEach((tool, i) => {
    const path = `${listPath}[${i}]`;
    if (!isJsonObject(tool)) throw invalidField(path, 'a tool must be an object.');
    if (typeof tool.type !== 'string') throw invalidField(`${path}.type`, 'type must be a string.');
    switch (tool.type) {
      case 'function':
      case 'custom':
        add(...clientTool(tool, path));
        return;
      case 'namespace':
        for (const [fn, shape, at] of groupTools(tool, path)) add(fn, shape, at);
        return;
      case 'local_shell':
        add({ name: 'local_shell', description: LOCAL_SHELL_DESCRIPTION, parameters: LOCAL_SHELL_SCHEMA }, { kind: 'local_shell', name: 'local_shell' }, path);
        return;
      default: {
        // A platform tool, or a type this gateway does not know (a client may send any).
        const type: string = tool.type;
        offer.withdrawn.push({ name: `tools:${type}`, label: `tools:${BUILT_IN_TYPES.has(type) ? type : 'other'}` });
        offer.withdrawnTypes.add(type);
      }
    }
  });
}

/** A function or custom tool (on its own, or in a group) as the chat function that stands for it. */
function clientTool(tool: ResponsesFunctionTool | ResponsesCustomTool, path: string, namespace?: string): [ChatFunctionDefinition, ToolShape, string] {
  if (typeof tool.name !== 'string' || tool.name === '') throw invalidField(`${path}.name`, 'name must be a non-empty string.');
  const fn: ChatFunctionDefinition = { name: chatToolName(tool.name, namespace) };
  if (typeof tool.description === 'string') fn.description = tool.description;
  if (tool.type === 'custom') {
    fn.parameters = CUSTOM_INPUT_SCHEMA;
    return [fn, { kind: 'custom', name: tool.name, ...(namespace ? { namespace } : {}) }, path];
  }
  if (tool.parameters !== undefined && tool.parameters !== null) {
    if (!isJsonObject(tool.parameters)) throw invalidField(`${path}.parameters`, 'parameters must be a JSON Schema object.');
    fn.parameters = tool.parameters;
  }
  if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
  return [fn, { kind: 'function', name: tool.name, ...(namespace ? { namespace } : {}) }, path];
}

/** A tool group's function and custom tools, flattened: `group__tool`. */
function groupTools(group: ResponsesNamespaceTool, path: string): [ChatFunctionDefinition, ToolShape, string][] {
  if (typeof group.name !== 'string' || !/^[A-Za-z0-9_-]+$/.test(group.name)) {
    throw invalidField(`${path}.name`, 'a namespace name must be a non-empty string of letters, digits, _ and -.');
  }
  if (!Array.isArray(group.tools)) throw invalidField(`${path}.tools`, 'tools must be an array of function or custom tools.');
  const namespace = group.name;
  return group.tools.map((tool, j) => {
    const at = `${path}.tools[${j}]`;
    if (!isJsonObject(tool) || (tool.type !== 'function' && tool.type !== 'custom')) throw invalidField(`${at}.type`, 'a namespace holds function and custom tools.');
    return clientTool(tool, at, namespace);
  });
}

/** `auto`, `none`, `required`, or one function or custom tool by name; forcing a withdrawn built-in tool is refused. */
export function chatToolChoice(choice: ResponsesToolChoice | null | undefined, offer: ResponsesToolOffer): ChatToolChoice | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (choice === 'auto' || choice === 'none') return choice;
  const forcesWithdrawn = `it forces a tool that only OpenAI's platform runs, withdrawn from the offer to this model (see x-gateway-ignored-params): ${BUILT_IN}.`;
  if (choice === 'required') {
    if (offer.tools === undefined && offer.withdrawn.length > 0) throw unsupportedField('tool_choice', forcesWithdrawn);
    return choice;
  }
  if (!isJsonObject(choice)) throw invalidField('tool_choice', 'tool_choice must be auto, none, required or {"type": "function", "name": …}.');
  if (choice.type === 'function' || choice.type === 'custom') {
    if (typeof choice.name !== 'string' || choice.name === '') throw invalidField('tool_choice.name', 'name must be a non-empty string.');
    return { type: 'function', function: { name: chatToolName(choice.name, choice.namespace) } };
  }
  const type: unknown = choice.type;
  if (typeof type === 'string' && offer.withdrawnTypes.has(type)) throw unsupportedField('tool_choice', forcesWithdrawn);
  throw unsupportedField('tool_choice', `only function and custom tools can be chosen: ${BUILT_IN}.`);
}

/** `text.format` as chat's `response_format`; undefined for plain text (chat's default). */
export function chatResponseFormat(text: ResponsesTextConfig | null | undefined): ChatResponseFormat | undefined {
  if (!isJsonObject(text) || text.format === undefined || text.format === null) return undefined;
  const format = text.format;
  if (!isJsonObject(format)) throw invalidField('text.format', 'format must be an object.');
  switch (format.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema': {
      if (typeof format.name !== 'string' || format.name === '') throw invalidField('text.format.name', 'name must be a non-empty string.');
      if (!isJsonObject(format.schema)) throw invalidField('text.format.schema', 'schema must be a JSON Schema object.');
      const jsonSchema: ChatResponseFormat['json_schema'] = { name: format.name, schema: format.schema };
      if (typeof format.description === 'string') jsonSchema.description = format.description;
      if (typeof format.strict === 'boolean') jsonSchema.strict = format.strict;
      return { type: 'json_schema', json_schema: jsonSchema };
    }
    default:
      throw invalidField('text.format.type', 'type must be text, json_object or json_schema.');
  }
}
