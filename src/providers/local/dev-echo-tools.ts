import { isJsonObject } from '../../common/json/scalar-fields';
import type { ChatRequestBody, ChatUserMessage } from '../chat-contract';
import { isTextPart, jsonObjectOf } from '../chat-request-parts';
import { EventLoopYielder } from '../token-count';

/** A tool call dev-echo makes: the function's name and its arguments as JSON text. */
export interface PlannedCall {
  name: string;
  arguments: string;
}

/** The function tools a chat body offers (`tools` entries of type function), by name, with their parameters schema (as sent: read with checks). */
type OfferedTools = Map<string, unknown>;

const CALL_KEYWORD = 'call';

/**
 * The tool calls dev-echo answers a chat body with (DESIGN.md section 11), in order: the `call NAME
 * {json-object}` lines of the last user message for offered tools; else, for a forced tool choice
 * (`required`: the first tool; or one function by name), one call with the least arguments its schema
 * requires; `tool_choice: "none"` never calls. Empty: no call, the answer is text.
 */
export async function plannedCalls(body: ChatRequestBody, lastUserContent: ChatUserMessage['content'] | undefined): Promise<PlannedCall[]> {
  const choice = body.tool_choice;
  if (choice === 'none') return [];
  const forcedName = forcedFunctionName(choice);
  const offered = offeredTools(body.tools, forcedName);
  if (offered.size === 0) return [];
  const scripted = await scriptedCalls(lastUserContent, offered);
  if (scripted.length > 0 || (choice !== 'required' && forcedName === null)) return scripted;
  const [name, parameters] = offered.entries().next().value!;
  return [{ name, arguments: JSON.stringify(minimalArguments(parameters)) }];
}

/** The function named by `tool_choice: {type: "function", function: {name}}`, if it names one. */
function forcedFunctionName(choice: ChatRequestBody['tool_choice']): string | null {
  if (!isJsonObject(choice) || choice.type !== 'function' || !isJsonObject(choice.function)) return null;
  return typeof choice.function.name === 'string' ? choice.function.name : null;
}

/** The function tools offered (only `onlyName`, when a choice forces it), first offer of a name kept, in order. */
function offeredTools(tools: ChatRequestBody['tools'], onlyName: string | null): OfferedTools {
  const offered: OfferedTools = new Map();
  if (!Array.isArray(tools)) return offered;
  for (const tool of tools) {
    if (!isJsonObject(tool) || tool.type !== 'function' || !isJsonObject(tool.function)) continue;
    const { name, parameters } = tool.function;
    if (typeof name !== 'string' || offered.has(name) || (onlyName !== null && name !== onlyName)) continue;
    offered.set(name, parameters);
  }
  return offered;
}

/**
 * The `call NAME {json-object}` lines of a message's text parts, in order (a part's end also ends a line);
 * a line whose NAME is not offered or whose rest is not a JSON object is no call. Linear in the text, and
 * it gives the event loop back every 10 ms: a 10 MB message of broken call lines costs seconds of parsing.
 */
export async function scriptedCalls(content: ChatUserMessage['content'] | undefined, offered: ReadonlyMap<string, unknown>): Promise<PlannedCall[]> {
  const calls: PlannedCall[] = [];
  const yielder = new EventLoopYielder();
  for (const text of textParts(content)) {
    for (let start = 0; start <= text.length; ) {
      const newline = text.indexOf('\n', start);
      const end = newline < 0 ? text.length : newline;
      const call = callOfLine(text, start, end, offered);
      if (call) calls.push(call);
      if (yielder.due(end - start + 1)) await yielder.yield();
      start = end + 1;
    }
  }
  return calls;
}

function textParts(content: ChatUserMessage['content'] | undefined): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return content.filter(isTextPart).map((part) => part.text);
}

/** The line `text[start, end)` read as `call NAME {json-object}` (surrounding whitespace allowed), or null; other lines cost no copy. */
function callOfLine(text: string, start: number, end: number, offered: ReadonlyMap<string, unknown>): PlannedCall | null {
  let first = start;
  while (first < end && isWhitespace(text.charAt(first))) first++;
  if (!text.startsWith(CALL_KEYWORD, first) || !isWhitespace(text.charAt(first + CALL_KEYWORD.length))) return null;
  const rest = text.slice(first + CALL_KEYWORD.length, end).trim();
  const nameEnd = rest.search(/\s/);
  if (nameEnd < 0) return null;
  const name = rest.slice(0, nameEnd);
  const json = rest.slice(nameEnd).trimStart();
  if (!offered.has(name) || !json.startsWith('{') || !json.endsWith('}')) return null;
  const args = jsonObjectOf(json);
  return args === null ? null : { name, arguments: JSON.stringify(args) };
}

function isWhitespace(char: string): boolean {
  return char !== '' && char.trim() === '';
}

/**
 * The least arguments a tool's parameters schema requires: its required properties only, each the least
 * value of its schema (`const`, an enum's first value, else by type: `""`, `0`, `false`, `[]`, an object of
 * its own required properties, `null` for a property without a type). No schema: `{}`.
 */
export function minimalArguments(parameters: unknown): Record<string, unknown> {
  return minimalObject(parameters);
}

function minimalObject(schema: unknown): Record<string, unknown> {
  if (!isJsonObject(schema) || !Array.isArray(schema.required)) return {};
  const properties = isJsonObject(schema.properties) ? schema.properties : {};
  const entries: [string, unknown][] = [];
  for (const name of schema.required) {
    if (typeof name !== 'string') continue;
    entries.push([name, minimalValue(Object.hasOwn(properties, name) ? properties[name] : undefined)]);
  }
  // fromEntries defines own properties, so a required "__proto__" is a property like any other.
  return Object.fromEntries(entries);
}

function minimalValue(schema: unknown): unknown {
  if (!isJsonObject(schema)) return null;
  if (Object.hasOwn(schema, 'const')) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  switch (Array.isArray(schema.type) ? schema.type[0] : schema.type) {
    case 'string':
      return '';
    case 'number':
    case 'integer':
      return 0;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'object':
      return minimalObject(schema);
    default:
      return null;
  }
}
