/**
 * The chat contract's request (https://platform.openai.com/docs/api-reference/chat/create): what every route (chat,
 * Responses, Messages) hands a provider, in OpenAI's chat-completion shapes; chat-contract.ts re-exports it beside
 * the answer. Messages are a union by role, content a union of parts, tools and tool_choice typed; unknown fields
 * are kept and an openai-compatible upstream receives them as sent. The types say what is expected, not what is
 * guaranteed (the chat route checks only that each message is an object with a string role): translators still
 * check what they read (typeof, Array.isArray).
 */

/**
 * A client's request in its own dialect, for an upstream that speaks it natively (DESIGN.md sections 11 and 12:
 * Messages in, `anthropic` up; Responses in, `openai` up). Such a provider sends `body` as it came, `model` and
 * the output limit aside; any other provider serves the chat body it is attached to.
 */
export const PASS_THROUGH: unique symbol = Symbol('pass-through');

export interface PassThrough {
  dialect: 'anthropic' | 'openai-responses';
  /** The client's body as sent. */
  body: Record<string, unknown>;
  /** The client's headers of that dialect the upstream must see (`anthropic-version`, `anthropic-beta`). */
  headers: Readonly<Record<string, string>>;
}

export interface ChatTextPart {
  type: 'text';
  text: string;
  [extra: string]: unknown;
}

/** An image: `image_url` is `{url, detail?}` (OpenAI) or, from older clients, the URL itself. */
export interface ChatImagePart {
  type: 'image_url';
  image_url: { url: string; detail?: string; [extra: string]: unknown } | string;
  [extra: string]: unknown;
}

export interface ChatInputAudioPart {
  type: 'input_audio';
  input_audio: { data: string; format: string };
  [extra: string]: unknown;
}

export interface ChatFilePart {
  type: 'file';
  file: { file_data?: string; file_id?: string; filename?: string };
  [extra: string]: unknown;
}

export interface ChatRefusalPart {
  type: 'refusal';
  refusal: string;
  [extra: string]: unknown;
}

export type ChatContentPart = ChatTextPart | ChatImagePart | ChatInputAudioPart | ChatFilePart | ChatRefusalPart;

/** Instructions: `system`, or `developer` as OpenAI's reasoning models name them. */
export interface ChatSystemMessage {
  role: 'system' | 'developer';
  content: string | ChatTextPart[];
  name?: string;
  [extra: string]: unknown;
}

export interface ChatUserMessage {
  role: 'user';
  content: string | ChatContentPart[];
  name?: string;
  [extra: string]: unknown;
}

/** A function call, in a request's assistant message as in an answer: its name and its arguments as JSON text (whole in a message, in pieces in deltas). */
export interface ChatFunctionCall {
  name?: string;
  arguments?: string;
  [extra: string]: unknown;
}

/** One tool call of an assistant message. */
export interface ChatToolCall {
  id?: string;
  type?: string;
  function?: ChatFunctionCall;
  [extra: string]: unknown;
}

/** An earlier answer sent back: its text, and the tool calls whose results follow as `tool` messages. */
export interface ChatAssistantMessage {
  role: 'assistant';
  content?: string | (ChatTextPart | ChatRefusalPart)[] | null;
  refusal?: string | null;
  tool_calls?: ChatToolCall[];
  function_call?: ChatFunctionCall | null;
  name?: string;
  [extra: string]: unknown;
}

/** A tool's result, tied to its call by `tool_call_id`. */
export interface ChatToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string | ChatTextPart[];
  [extra: string]: unknown;
}

/** The legacy function result: named, with no call id. */
export interface ChatFunctionMessage {
  role: 'function';
  name: string;
  content: string | null;
  [extra: string]: unknown;
}

/** A message of the request, by role (the pipe checks only that a role is a string: readers still check). */
export type ChatRequestMessage = ChatSystemMessage | ChatUserMessage | ChatAssistantMessage | ChatToolMessage | ChatFunctionMessage;

export interface ChatFunctionDefinition {
  name: string;
  description?: string;
  /** A JSON Schema of the arguments object. */
  parameters?: Record<string, unknown>;
  strict?: boolean | null;
  [extra: string]: unknown;
}

export interface ChatFunctionTool {
  type: 'function';
  function: ChatFunctionDefinition;
  [extra: string]: unknown;
}

/** A custom tool: free-form input, optionally constrained by a grammar (`format`). */
export interface ChatCustomTool {
  type: 'custom';
  custom: { name: string; description?: string; format?: ChatCustomToolFormat; [extra: string]: unknown };
  [extra: string]: unknown;
}

/** A custom tool's input: unconstrained text, or text of a grammar (Lark or a regular expression). */
export type ChatCustomToolFormat = { type: 'text' } | { type: 'grammar'; grammar: { definition: string; syntax: 'lark' | 'regex' } };

export type ChatTool = ChatFunctionTool | ChatCustomTool;

/** Which tool the model must (or must not) call. */
export type ChatToolChoice = 'none' | 'auto' | 'required' | ChatNamedTool | { type: 'allowed_tools'; allowed_tools: { mode: 'auto' | 'required'; tools: ChatNamedTool[] } };

/** One tool by name: the one a tool_choice forces, or one of those it allows. */
export type ChatNamedTool = { type: 'function'; function: { name: string } } | { type: 'custom'; custom: { name: string } };

/** `response_format`: text, any JSON object, or JSON that matches `json_schema.schema`. */
export interface ChatResponseFormat {
  type: 'text' | 'json_object' | 'json_schema';
  json_schema?: { name: string; description?: string; /** A JSON Schema. */ schema?: Record<string, unknown>; strict?: boolean | null };
  [extra: string]: unknown;
}

/**
 * A chat completion request as it goes to a provider, `model` already the deployment's upstream model. The
 * options the gateway or the translators read are named; any other field the client sent is kept, and an
 * openai-compatible upstream receives it as sent.
 */
export interface ChatRequestBody {
  /** The client's own body, when an upstream speaks its dialect natively. */
  [PASS_THROUGH]?: PassThrough;
  model: string;
  messages: ChatRequestMessage[];
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean | null; [extra: string]: unknown } | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  n?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  stop?: string | string[] | null;
  tools?: ChatTool[];
  tool_choice?: ChatToolChoice;
  /** The legacy function tools (before `tools`): still counted in the prompt. */
  functions?: ChatFunctionDefinition[];
  parallel_tool_calls?: boolean | null;
  reasoning_effort?: string | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  response_format?: ChatResponseFormat | null;
  user?: string;
  service_tier?: string | null;
  store?: boolean | null;
  seed?: number | null;
  /** Anthropic's fast mode and region of inference, which a chat client may ask of an `anthropic` upstream (DESIGN.md 12.2). */
  speed?: string;
  inference_geo?: string;
  [extra: string]: unknown;
}
