import { isJsonObject } from '../common/json/scalar-fields';
import { quotedClientText } from '../models/requested-model';
import { invalidField, unsupportedField } from '../errors';
import { ChatImagePart, ChatRequestMessage, ChatTextPart, ChatToolCall } from '../providers/chat-contract';
import type {
  ResponsesContentPart,
  ResponsesInputImage,
  ResponsesInputItem,
  ResponsesLocalShellAction,
  ResponsesMessage,
  ResponsesRequest,
  ResponsesToolOutput,
} from '../providers/openai/responses-wire';
import { ADDITIONAL_TOOLS, chatToolName, LocalShellArguments } from './responses-tools';

type ChatPart = ChatTextPart | ChatImagePart;

/**
 * Chat roles for the Responses API's message roles. `developer` becomes `system`: chat-completion
 * upstreams other than OpenAI's know `system` only, and OpenAI treats the two alike for chat models.
 */
const CHAT_ROLES = new Map<string, 'user' | 'assistant' | 'system'>([
  ['user', 'user'],
  ['assistant', 'assistant'],
  ['system', 'system'],
  ['developer', 'system'],
]);

/** The chat messages of a Responses request: `instructions` first, as a system message, then the input items in order. */
export function chatMessages(instructions: string | null | undefined, input: ResponsesRequest['input']): ChatRequestMessage[] {
  const messages: ChatRequestMessage[] = [];
  if (typeof instructions === 'string' && instructions !== '') messages.push({ role: 'system', content: instructions });
  if (typeof input === 'string') {
    messages.push({ role: 'user', content: input });
    return messages;
  }
  if (input === undefined || input === null) throw invalidField('input', 'input is required: a string, or a non-empty array of input items.');
  if (!Array.isArray(input) || input.length === 0) throw invalidField('input', 'input must be a string or a non-empty array of input items.');
  input.forEach((item, i) => appendItem(messages, item, `input[${i}]`));
  // Reasoning items alone leave nothing to send: chat completions need at least one message.
  if (messages.length === 0) throw invalidField('input', 'input must hold at least one message or function call item.');
  return messages;
}

function appendItem(messages: ChatRequestMessage[], item: ResponsesInputItem, path: string): void {
  if (!isJsonObject(item)) throw invalidField(path, 'an input item must be an object.');
  // An item without a type is a message ("EasyInputMessage").
  if (item.type === undefined || item.type === null || item.type === 'message') {
    messages.push(chatMessage(item, path));
    return;
  }
  // A client may send any type: the default below names it.
  const type: unknown = item.type;
  if (typeof type !== 'string') throw invalidField(`${path}.type`, 'type must be a string.');
  switch (item.type) {
    case 'function_call':
      appendToolCall(messages, requiredString(item, 'call_id', path), chatToolName(requiredString(item, 'name', path), item.namespace), requiredString(item, 'arguments', path));
      return;
    case 'custom_tool_call':
      appendToolCall(messages, requiredString(item, 'call_id', path), chatToolName(requiredString(item, 'name', path), item.namespace), JSON.stringify({ input: requiredString(item, 'input', path) }));
      return;
    case 'local_shell_call':
      appendToolCall(messages, requiredString(item, 'call_id', path), 'local_shell', localShellArguments(item.action, `${path}.action`));
      return;
    case 'function_call_output':
    case 'custom_tool_call_output':
      messages.push({ role: 'tool', tool_call_id: requiredString(item, 'call_id', path), content: toolOutput(item.output, `${path}.output`) });
      return;
    case 'local_shell_call_output':
      // OpenAI names the call it answers `id` here (the call's call_id); `call_id` is read first where a client sends it.
      messages.push({ role: 'tool', tool_call_id: requiredString(item, typeof item.call_id === 'string' ? 'call_id' : 'id', path), content: toolOutput(item.output, `${path}.output`) });
      return;
    case 'reasoning':
      // A reasoning model's earlier summary: chat completions take none back, and the answer does not depend on it.
      return;
    case ADDITIONAL_TOOLS:
      // Tools the client offers (Codex): offered with the request's tools (responses-tools.ts), no message.
      return;
    default:
      throw unsupportedField(`${path}.type`, `input items of type ${quotedClientText(type)} come from stored responses or built-in tools, which this gateway does not offer.`);
  }
}

function chatMessage(item: ResponsesMessage, path: string): ChatRequestMessage {
  const role = typeof item.role === 'string' ? CHAT_ROLES.get(item.role) : undefined;
  if (!role) throw invalidField(`${path}.role`, 'role must be one of user, assistant, system, developer.');
  const { content } = item;
  if (typeof content === 'string') return { role, content };
  if (!Array.isArray(content)) throw invalidField(`${path}.content`, 'content must be a string or an array of content parts.');
  const parts = content.map((part, j) => contentPart(part, `${path}.content[${j}]`));
  if (role === 'user') return { role, content: parts };
  // Only user messages carry images in chat; text-only upstreams take the others' text as one string.
  const image = parts.findIndex((part) => part.type !== 'text');
  if (image >= 0) throw invalidField(`${path}.content[${image}]`, `a ${String(item.role)} message holds text only.`);
  return { role, content: parts.map((part) => (part.type === 'text' ? part.text : '')).join('') };
}

function contentPart(part: ResponsesContentPart, path: string): ChatPart {
  if (!isJsonObject(part)) throw invalidField(path, 'a content part must be an object.');
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: requiredString(part, 'text', path) };
    case 'refusal':
      return { type: 'text', text: requiredString(part, 'refusal', path) };
    case 'input_image':
      return imagePart(part, path);
    case 'input_file':
    case 'input_audio':
      throw unsupportedField(`${path}.type`, `${part.type} parts are not passed to chat-completion upstreams; send the content as text or as an image URL.`);
    default:
      throw invalidField(`${path}.type`, 'type must be input_text, input_image or (in assistant messages) output_text or refusal.');
  }
}

function imagePart(part: ResponsesInputImage, path: string): ChatImagePart {
  if (part.file_id !== undefined && part.file_id !== null) {
    throw unsupportedField(`${path}.file_id`, 'uploaded files are not stored by this gateway; send the image as image_url (an https or data: URL).');
  }
  const url = requiredString(part, 'image_url', path);
  const detail: unknown = part.detail;
  if (detail !== undefined && detail !== null && detail !== 'auto' && detail !== 'low' && detail !== 'high') {
    throw invalidField(`${path}.detail`, 'detail must be auto, low or high.');
  }
  return { type: 'image_url', image_url: typeof detail === 'string' ? { url, detail } : { url } };
}

/** A tool call the model made earlier (function, custom, grouped or local shell): a tool call of the assistant message it belongs to. */
function appendToolCall(messages: ChatRequestMessage[], callId: string, name: string, args: string): void {
  const call: ChatToolCall = { id: callId, type: 'function', function: { name, arguments: args } };
  const last = messages[messages.length - 1];
  if (last?.role === 'assistant') {
    last.tool_calls = [...(last.tool_calls ?? []), call];
    return;
  }
  messages.push({ role: 'assistant', content: null, tool_calls: [call] });
}

/** A local shell call's exec action as the arguments of the `local_shell` function that stands for it. */
function localShellArguments(action: ResponsesLocalShellAction, path: string): string {
  if (!isJsonObject(action)) throw invalidField(path, 'action must be an object.');
  const command: unknown = action.command;
  if (!isStringArray(command)) throw invalidField(`${path}.command`, 'command must be an array of strings.');
  const args: LocalShellArguments = { command };
  if (typeof action.working_directory === 'string') args.workdir = action.working_directory;
  if (typeof action.timeout_ms === 'number') args.timeout_ms = action.timeout_ms;
  return JSON.stringify(args);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((part) => typeof part === 'string');
}

function toolOutput(output: ResponsesToolOutput, path: string): string {
  if (typeof output === 'string') return output;
  if (!Array.isArray(output)) throw invalidField(path, 'output must be a string or an array of input_text parts.');
  return output
    .map((part, j) => {
      if (!isJsonObject(part) || part.type !== 'input_text') {
        throw unsupportedField(`${path}[${j}]`, 'chat-completion upstreams take text tool results only (input_text parts).');
      }
      return requiredString(part, 'text', `${path}[${j}]`);
    })
    .join('');
}

function requiredString<T extends object>(item: T, name: keyof T & string, path: string): string {
  const value: unknown = item[name];
  if (typeof value !== 'string') throw invalidField(`${path}.${name}`, `${name} must be a string.`);
  return value;
}
