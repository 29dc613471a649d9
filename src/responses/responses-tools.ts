import { isJsonObject } from '../common/json/scalar-fields';
import { quotedClientText } from '../models/requested-model';
import { invalidField, unsupportedField } from '../errors';

const BUILT_IN = 'built-in tools run on OpenAI\'s platform, not on chat-completion upstreams; only function tools are served.';

/** Responses function tools (`{type, name, parameters, …}`) as chat tools (`{type, function: {name, parameters, …}}`). */
export function chatTools(tools: unknown): Record<string, unknown>[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw invalidField('tools', 'tools must be an array.');
  return tools.map((tool, i) => {
    const path = `tools[${i}]`;
    if (!isJsonObject(tool)) throw invalidField(path, 'a tool must be an object.');
    if (tool.type !== 'function') {
      throw unsupportedField(`${path}.type`, `${typeof tool.type === 'string' ? quotedClientText(tool.type) : 'this tool'}: ${BUILT_IN}`);
    }
    if (typeof tool.name !== 'string' || tool.name === '') throw invalidField(`${path}.name`, 'name must be a non-empty string.');
    const fn: Record<string, unknown> = { name: tool.name };
    if (typeof tool.description === 'string') fn.description = tool.description;
    if (tool.parameters !== undefined && tool.parameters !== null) {
      if (!isJsonObject(tool.parameters)) throw invalidField(`${path}.parameters`, 'parameters must be a JSON Schema object.');
      fn.parameters = tool.parameters;
    }
    if (typeof tool.strict === 'boolean') fn.strict = tool.strict;
    return { type: 'function', function: fn };
  });
}

/** `auto`, `none`, `required`, or one function by name. */
export function chatToolChoice(choice: unknown): unknown {
  if (choice === undefined || choice === null) return undefined;
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (!isJsonObject(choice)) throw invalidField('tool_choice', 'tool_choice must be auto, none, required or {"type": "function", "name": …}.');
  if (choice.type !== 'function') throw unsupportedField('tool_choice', `only function tools can be chosen: ${BUILT_IN}`);
  if (typeof choice.name !== 'string' || choice.name === '') throw invalidField('tool_choice.name', 'name must be a non-empty string.');
  return { type: 'function', function: { name: choice.name } };
}

/** `text.format` as chat's `response_format`; undefined for plain text (chat's default). */
export function chatResponseFormat(text: unknown): Record<string, unknown> | undefined {
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
      const schema: Record<string, unknown> = { name: format.name, schema: format.schema };
      if (typeof format.description === 'string') schema.description = format.description;
      if (typeof format.strict === 'boolean') schema.strict = format.strict;
      return { type: 'json_schema', json_schema: schema };
    }
    default:
      throw invalidField('text.format.type', 'type must be text, json_object or json_schema.');
  }
}
