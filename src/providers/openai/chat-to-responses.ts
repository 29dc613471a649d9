import type { CatalogEntry } from '../../config/gateway-config.schema';
import type {
  ChatAssistantMessage,
  ChatContentPart,
  ChatFunctionMessage,
  ChatNamedTool,
  ChatRequestBody,
  ChatRequestMessage,
  ChatSystemMessage,
  ChatTextPart,
  ChatTool,
  ChatToolCall,
  ChatToolChoice,
  ChatUserMessage,
} from '../chat-contract';
import { imageUrlOf, messageText } from '../chat-request-parts';
import { UpstreamFailure } from '../upstream-failure';
import type {
  ResponsesContentPart,
  ResponsesCustomTool,
  ResponsesFunctionTool,
  ResponsesInputItem,
  ResponsesOutputContent,
  ResponsesReasoningConfig,
  ResponsesRequest,
  ResponsesTextConfig,
  ResponsesTextFormat,
  ResponsesTool,
  ResponsesToolChoice,
} from './responses-wire';

type Json = Record<string, unknown>;

/** Chat's fields with no Responses field: not sent, and named in `x-gateway-ignored-params` by the routes (DESIGN.md 11). */
export const UNSENT_CHAT_FIELDS: readonly string[] = ['stop', 'seed', 'frequency_penalty', 'presence_penalty', 'logit_bias', 'logprobs', 'top_logprobs', 'prediction', 'web_search_options'];

/** OpenAI's least `max_output_tokens` (CreateResponse: `minimum: 16`); below it OpenAI answers 400 for a field the chat client never sent. */
export const MIN_OUTPUT_TOKENS = 16;

/**
 * A chat completion request as a Responses request, for a catalog entry with `upstream_api: responses` (DESIGN.md
 * section 12; docs/responses.md, "Chat and Messages clients on a Responses-only model"). Messages become input items in
 * their order (system and developer messages stay messages of their role, where they stood; earlier answers become
 * assistant messages of `output_text` parts and `function_call` / `custom_tool_call` items; tool results
 * `function_call_output` / `custom_tool_call_output` items), tools and tool_choice are flattened, the output limit is
 * `max_output_tokens`, `reasoning_effort` is `reasoning.effort`, `response_format` and `verbosity` are `text`, and
 * `store` is always false (the gateway keeps no state). What Responses cannot answer (several choices, audio in or out,
 * a limit below its least) is a 400 before any upstream call; what only tunes chat's sampling and has no Responses field
 * (stop, seed, penalties, logit_bias, logprobs, prediction, web_search_options) is not sent.
 */
export function responsesRequest(body: ChatRequestBody, model: CatalogEntry): ResponsesRequest {
  refuseUnanswerable(body, model);
  const request: ResponsesRequest = { model: body.model, input: inputItems(body.messages ?? []) };
  const tools = responsesTools(body);
  if (tools.length > 0) request.tools = tools;
  const choice = responsesToolChoice(body.tool_choice ?? legacyFunctionChoice(body.function_call));
  if (choice !== undefined && tools.length > 0) request.tool_choice = choice;
  if (typeof body.parallel_tool_calls === 'boolean' && tools.length > 0) request.parallel_tool_calls = body.parallel_tool_calls;
  const limit = outputLimitOf(body);
  if (limit) request.max_output_tokens = limit.value;
  if (typeof body.temperature === 'number') request.temperature = body.temperature;
  if (typeof body.top_p === 'number') request.top_p = body.top_p;
  if (typeof body.reasoning_effort === 'string') request.reasoning = { effort: body.reasoning_effort as ResponsesReasoningConfig['effort'] };
  const text = textConfig(body);
  if (text) request.text = text;
  // The fields both APIs share by name (ModelResponseProperties in OpenAI's schema): `user` stays `user`, deprecated on
  // both for `safety_identifier` and `prompt_cache_key`; moving it into `safety_identifier` would refuse what chat takes
  // (more than 64 characters) and lose its part in cache bucketing.
  for (const field of ['user', 'safety_identifier', 'prompt_cache_key', 'prompt_cache_retention', 'service_tier'] as const) {
    const value = body[field];
    if (typeof value === 'string') request[field] = value;
  }
  if (isObject(body.metadata)) request.metadata = body.metadata as Record<string, string>;
  request.store = false;
  if (body.stream === true) request.stream = true;
  return request;
}

function refuseUnanswerable(body: ChatRequestBody, model: CatalogEntry): void {
  const rejected = (message: string) => new UpstreamFailure('rejected', message, 400);
  if (typeof body.n === 'number' && body.n > 1) throw rejected(`n: ${body.n} asks for several answers; ${model.id} is served by OpenAI's Responses API, which gives one per request.`);
  const limit = outputLimitOf(body);
  if (limit && limit.value < MIN_OUTPUT_TOKENS) throw rejected(`${limit.param}: ${limit.value} is below ${MIN_OUTPUT_TOKENS}, the least output limit OpenAI's Responses API (which serves ${model.id}) takes.`);
  if (Array.isArray(body.modalities) && body.modalities.includes('audio')) throw rejected(`modalities: ["audio"] asks for spoken answers; ${model.id} is served by OpenAI's Responses API, which answers in text.`);
  const audio = (body.messages ?? []).some((m) => m.role === 'user' && Array.isArray(m.content) && m.content.some((part) => part?.type === 'input_audio'));
  if (audio) throw rejected(`input_audio parts cannot be heard by ${model.id}: it is served by OpenAI's Responses API, which takes text, images and files.`);
}

/** The output limit the request carries: the gateway's (max_completion_tokens, set when it capped the allowance) or the client's. */
function outputLimitOf(body: ChatRequestBody): { param: string; value: number } | null {
  if (typeof body.max_completion_tokens === 'number') return { param: 'max_completion_tokens', value: body.max_completion_tokens };
  if (typeof body.max_tokens === 'number') return { param: 'max_tokens', value: body.max_tokens };
  return null;
}

// ---- Messages → input items ----

/** What the translation of one conversation remembers: which call ids are custom tools', and legacy function calls awaiting a result. */
interface Conversation {
  items: ResponsesInputItem[];
  customCallIds: Set<string>;
  legacyCalls: { name: string; callId: string }[];
  legacyCount: number;
}

function inputItems(messages: ChatRequestMessage[]): ResponsesInputItem[] {
  const conversation: Conversation = { items: [], customCallIds: new Set(), legacyCalls: [], legacyCount: 0 };
  messages.forEach((message, at) => appendMessage(conversation, message, at));
  return conversation.items;
}

function appendMessage(conversation: Conversation, message: ChatRequestMessage, at: number): void {
  const { items } = conversation;
  switch (message.role) {
    case 'system':
    case 'developer':
      // In place and of their own role, not joined into `instructions`: a system message later in a conversation keeps its
      // place (as a Messages `system` entry does, DESIGN.md section 11), and each keeps its bounds.
      return void items.push({ role: message.role, content: instructionContent((message as ChatSystemMessage).content) });
    case 'user':
      return void items.push({ role: 'user', content: userContent((message as ChatUserMessage).content) });
    case 'assistant':
      return appendAssistant(conversation, message as ChatAssistantMessage);
    case 'tool': {
      const callId = String(message.tool_call_id ?? '');
      const output = messageText(message.content);
      const type = conversation.customCallIds.has(callId) ? 'custom_tool_call_output' : 'function_call_output';
      return void items.push({ type, call_id: callId, output });
    }
    case 'function':
      return appendLegacyResult(conversation, message as ChatFunctionMessage);
    default:
      // Dropping it would change the conversation; OpenAI's chat completions refuse it too.
      throw new UpstreamFailure('rejected', `messages[${at}].role: ${JSON.stringify((message as { role: unknown }).role)} is not one of system, developer, user, assistant, tool, function.`, 400);
  }
}

function instructionContent(content: ChatSystemMessage['content']): string | ResponsesContentPart[] {
  if (typeof content === 'string') return content;
  return (Array.isArray(content) ? content : []).filter(isTextPart).map((part) => ({ type: 'input_text', text: part.text }));
}

function userContent(content: ChatUserMessage['content']): string | ResponsesContentPart[] {
  if (typeof content === 'string') return content;
  const parts: ResponsesContentPart[] = [];
  for (const part of Array.isArray(content) ? content : []) {
    const translated = userPart(part);
    if (translated) parts.push(translated);
  }
  return parts;
}

/** A chat content part as an input part: text, an image by URL (`detail` required by OpenAI's schema: chat's default `auto`), a file. */
function userPart(part: ChatContentPart): ResponsesContentPart | null {
  switch (part?.type) {
    case 'text':
      return typeof part.text === 'string' ? { type: 'input_text', text: part.text } : null;
    case 'image_url': {
      const url = imageUrlOf(part.image_url);
      const detail = typeof part.image_url === 'object' ? part.image_url?.detail : undefined;
      return url === '' ? null : { type: 'input_image', image_url: url, detail: (detail ?? 'auto') as 'auto' };
    }
    case 'file': {
      const { file_id, file_data, filename } = part.file ?? {};
      return { type: 'input_file', ...(file_id !== undefined && { file_id }), ...(file_data !== undefined && { file_data }), ...(filename !== undefined && { filename }) };
    }
    case 'refusal':
      return typeof part.refusal === 'string' ? { type: 'input_text', text: part.refusal } : null;
    default:
      return null;
  }
}

/**
 * An earlier answer: its text and refusal as an assistant message, written as the Codex CLI sends its history back
 * (`{type: "message", role: "assistant", content: [{type: "output_text", text}]}`, no id or status: none was kept), then
 * one item per tool call. Chat's `reasoning_content` is not sent: Responses takes reasoning back only as the upstream's
 * own reasoning items, which a chat client never received.
 */
function appendAssistant(conversation: Conversation, message: ChatAssistantMessage): void {
  const content: ResponsesOutputContent[] = [];
  if (typeof message.content === 'string' && message.content !== '') content.push({ type: 'output_text', text: message.content });
  for (const part of Array.isArray(message.content) ? message.content : []) {
    if (part?.type === 'text' && typeof part.text === 'string' && part.text !== '') content.push({ type: 'output_text', text: part.text });
    else if (part?.type === 'refusal' && typeof part.refusal === 'string') content.push({ type: 'refusal', refusal: part.refusal });
  }
  if (typeof message.refusal === 'string' && message.refusal !== '') content.push({ type: 'refusal', refusal: message.refusal });
  if (content.length > 0) conversation.items.push({ type: 'message', role: 'assistant', content });
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) appendToolCall(conversation, call);
  const legacy = message.function_call;
  if (legacy && typeof legacy.name === 'string') {
    // The legacy function call has no id: one is made, and the next `function` message of that name answers it.
    const callId = `call_function_${++conversation.legacyCount}`;
    conversation.legacyCalls.push({ name: legacy.name, callId });
    conversation.items.push({ type: 'function_call', call_id: callId, name: legacy.name, arguments: String(legacy.arguments ?? '') });
  }
}

function appendToolCall(conversation: Conversation, call: ChatToolCall): void {
  const callId = String(call?.id ?? '');
  const custom = call?.type === 'custom' && isObject(call.custom) ? (call.custom as Json) : null;
  if (custom) {
    conversation.customCallIds.add(callId);
    conversation.items.push({ type: 'custom_tool_call', call_id: callId, name: String(custom.name ?? ''), input: String(custom.input ?? '') });
    return;
  }
  const fn = call?.function ?? {};
  conversation.items.push({ type: 'function_call', call_id: callId, name: String(fn.name ?? ''), arguments: String(fn.arguments ?? '') });
}

/** A legacy function result: the output of the earliest unanswered call of its name, else (no call to tie it to) user text. */
function appendLegacyResult(conversation: Conversation, message: ChatFunctionMessage): void {
  const output = messageText(message.content);
  const at = conversation.legacyCalls.findIndex((call) => call.name === message.name);
  if (at < 0) return void conversation.items.push({ role: 'user', content: output });
  const [call] = conversation.legacyCalls.splice(at, 1);
  conversation.items.push({ type: 'function_call_output', call_id: call.callId, output });
}

// ---- Tools, tool_choice, text ----

/**
 * Function tools flattened (`{type, name, description, parameters, strict}`); `strict` always said, false where chat
 * left it out: Responses makes a tool without `strict` strict (its schema normalised, optional fields made required),
 * chat leaves it non-strict (https://developers.openai.com/api/docs/guides/function-calling, "strict mode"). Custom tools likewise, a grammar
 * format flattened (`{type: "grammar", syntax, definition}`). Legacy `functions` serve when no `tools` are given.
 */
function responsesTools(body: ChatRequestBody): ResponsesTool[] {
  const tools: ResponsesTool[] = [];
  for (const tool of Array.isArray(body.tools) ? body.tools : []) {
    const translated = responsesTool(tool);
    if (translated) tools.push(translated);
  }
  if (tools.length === 0 && Array.isArray(body.functions)) {
    for (const fn of body.functions as Json[]) if (isObject(fn) && typeof fn.name === 'string') tools.push(functionTool(fn as { name: string }));
  }
  return tools;
}

function responsesTool(tool: ChatTool): ResponsesTool | null {
  if (tool?.type === 'function' && typeof tool.function?.name === 'string') return functionTool(tool.function);
  if (tool?.type !== 'custom' || typeof tool.custom?.name !== 'string') return null;
  const { name, description, format } = tool.custom;
  const custom: ResponsesCustomTool = { type: 'custom', name };
  if (typeof description === 'string') custom.description = description;
  const grammar = isObject(format) && format.type === 'grammar' && isObject(format.grammar) ? (format.grammar as Json) : null;
  if (grammar) custom.format = { type: 'grammar', syntax: grammar.syntax as 'lark', definition: String(grammar.definition ?? '') };
  else if (isObject(format) && format.type === 'text') custom.format = { type: 'text' };
  return custom;
}

function functionTool(fn: { name: string; description?: unknown; parameters?: unknown; strict?: unknown }): ResponsesFunctionTool {
  const tool: ResponsesFunctionTool = { type: 'function', name: fn.name };
  if (typeof fn.description === 'string') tool.description = fn.description;
  // Both required by OpenAI's FunctionTool (nullable): no parameters is chat's "empty parameter list".
  tool.parameters = isObject(fn.parameters) ? fn.parameters : null;
  tool.strict = fn.strict === true;
  return tool;
}

/** chat's tool_choice as Responses': the modes as they are, a named tool flattened, allowed_tools' list flattened. */
function responsesToolChoice(choice: ChatToolChoice | undefined): ResponsesToolChoice | undefined {
  if (choice === 'none' || choice === 'auto' || choice === 'required') return choice;
  if (!isObject(choice)) return undefined;
  if (choice.type !== 'allowed_tools') return namedTool(choice) ?? undefined;
  if (!isObject(choice.allowed_tools)) return undefined;
  const { mode, tools } = choice.allowed_tools;
  return { type: 'allowed_tools', mode, tools: (Array.isArray(tools) ? tools : []).map((tool) => namedTool(tool) ?? tool) };
}

/** `{type: "function", function: {name}}` (or custom) as `{type: "function", name}`; null when it names none. */
function namedTool(tool: ChatNamedTool): { type: 'function' | 'custom'; name: string } | null {
  const name = tool?.type === 'function' ? tool.function?.name : tool?.type === 'custom' ? tool.custom?.name : undefined;
  return typeof name === 'string' ? { type: tool.type, name } : null;
}

/** The legacy `function_call` (with `functions`) as a tool_choice. */
function legacyFunctionChoice(choice: unknown): ChatToolChoice | undefined {
  if (choice === 'none' || choice === 'auto') return choice;
  return isObject(choice) && typeof choice.name === 'string' ? { type: 'function', function: { name: choice.name } } : undefined;
}

/** `response_format` as `text.format` (a json_schema's fields lifted out of `json_schema`), and chat's `verbosity` as `text.verbosity`. */
function textConfig(body: ChatRequestBody): ResponsesTextConfig | null {
  const text: ResponsesTextConfig = {};
  const format = body.response_format;
  if (format?.type === 'json_object' || format?.type === 'text') text.format = { type: format.type };
  else if (format?.type === 'json_schema' && isObject(format.json_schema)) text.format = { type: 'json_schema', ...format.json_schema } as ResponsesTextFormat;
  if (typeof body.verbosity === 'string') text.verbosity = body.verbosity as ResponsesTextConfig['verbosity'];
  return Object.keys(text).length > 0 ? text : null;
}

function isTextPart(part: unknown): part is ChatTextPart {
  return isObject(part) && part.type === 'text' && typeof part.text === 'string';
}

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
