/**
 * OpenAI's Responses API on the wire (https://platform.openai.com/docs/api-reference/responses, the schemas of
 * /work/shared/openai-openapi.yaml: CreateResponse, Response, the input and output items, tools, ResponseUsage), in
 * one place for both sides that speak it: the Responses route (the gateway as OpenAI, src/responses/) and the
 * `openai` provider (the gateway as OpenAI's client). Fields are
 * optional where clients or OpenAI leave them out, and unknown fields are kept (`extra`): a pass-through body
 * reaches the upstream as sent, so these types say what is expected, not what is guaranteed: readers of a
 * client's or an upstream's data still check what they read. The answer (Response, usage) and its stream events
 * are in responses-events.ts.
 */

// ---- Content parts ----

export interface ResponsesInputText { type: 'input_text'; text: string; [extra: string]: unknown }

/** An image by URL (https or data:) or by uploaded file id. */
export interface ResponsesInputImage {
  type: 'input_image';
  image_url?: string | null;
  file_id?: string | null;
  detail?: 'auto' | 'low' | 'high' | 'original' | null;
  [extra: string]: unknown;
}

export interface ResponsesInputFile { type: 'input_file'; file_id?: string | null; file_data?: string; file_url?: string; filename?: string; [extra: string]: unknown }

export interface ResponsesInputAudio { type: 'input_audio'; input_audio: { data: string; format: string; [extra: string]: unknown }; [extra: string]: unknown }

/** The model's text: in an output message, and in an assistant message sent back. */
export interface ResponsesOutputText { type: 'output_text'; text: string; annotations?: unknown[]; logprobs?: unknown[]; [extra: string]: unknown }

export interface ResponsesRefusal { type: 'refusal'; refusal: string; [extra: string]: unknown }

/** What an output message holds (and an assistant message sent back). */
export type ResponsesOutputContent = ResponsesOutputText | ResponsesRefusal;
/** A part of an input message's content: input parts in user, system and developer messages, output parts in assistant ones. */
export type ResponsesContentPart = ResponsesInputText | ResponsesInputImage | ResponsesInputFile | ResponsesInputAudio | ResponsesOutputContent;

// ---- Items: what `input` holds and `output` answers ----

export type ResponsesItemStatus = 'in_progress' | 'completed' | 'incomplete';

/** A message; in `input` its `type` may be left out ("EasyInputMessage"). */
export interface ResponsesMessage {
  type?: 'message';
  id?: string;
  role: 'user' | 'system' | 'developer' | 'assistant';
  content: string | ResponsesContentPart[];
  status?: ResponsesItemStatus;
  [extra: string]: unknown;
}

/** The model's message in `output`. */
export interface ResponsesOutputMessage extends ResponsesMessage {
  type: 'message';
  id: string;
  role: 'assistant';
  content: ResponsesOutputContent[];
  status: ResponsesItemStatus;
}

/** A call of a function tool; `namespace` names the group (a `namespace` tool) the function belongs to. */
export interface ResponsesFunctionCall {
  type: 'function_call';
  id?: string;
  call_id: string;
  name: string;
  /** The arguments as JSON text. */
  arguments: string;
  namespace?: string;
  status?: ResponsesItemStatus;
  [extra: string]: unknown;
}

/** A call of a custom tool: its free-form input. */
export interface ResponsesCustomToolCall {
  type: 'custom_tool_call';
  id?: string;
  call_id: string;
  name: string;
  input: string;
  namespace?: string;
  status?: ResponsesItemStatus;
  [extra: string]: unknown;
}

/** A tool's result: text, or content parts (text, images, files). */
export type ResponsesToolOutput = string | (ResponsesInputText | ResponsesInputImage | ResponsesInputFile)[];

export interface ResponsesFunctionCallOutput {
  type: 'function_call_output';
  id?: string | null;
  call_id: string;
  output: ResponsesToolOutput;
  status?: ResponsesItemStatus | null;
  [extra: string]: unknown;
}

export interface ResponsesCustomToolCallOutput { type: 'custom_tool_call_output'; id?: string; call_id: string; output: ResponsesToolOutput; [extra: string]: unknown }

/** The local shell's command (Codex's `local_shell` tool). */
export interface ResponsesLocalShellAction {
  type: 'exec';
  command: string[];
  env: Record<string, string>;
  working_directory?: string | null;
  timeout_ms?: number | null;
  user?: string | null;
  [extra: string]: unknown;
}

export interface ResponsesLocalShellCall {
  type: 'local_shell_call';
  id?: string;
  call_id: string;
  action: ResponsesLocalShellAction;
  status?: ResponsesItemStatus;
  [extra: string]: unknown;
}

/** The result of a local shell call; OpenAI names the call it answers `id` (the call's call_id). */
export interface ResponsesLocalShellCallOutput {
  type: 'local_shell_call_output';
  id: string;
  call_id?: string;
  output: ResponsesToolOutput;
  status?: ResponsesItemStatus | null;
  [extra: string]: unknown;
}

export interface ResponsesSummaryText { type: 'summary_text'; text: string; [extra: string]: unknown }

/**
 * A reasoning model's reasoning: its summary and, when the request included `reasoning.encrypted_content`, the
 * reasoning itself encrypted, which a stateless client sends back byte for byte on the next turn.
 */
export interface ResponsesReasoning {
  type: 'reasoning';
  id?: string;
  summary: ResponsesSummaryText[];
  content?: { type: 'reasoning_text'; text: string; [extra: string]: unknown }[];
  encrypted_content?: string | null;
  status?: ResponsesItemStatus;
  [extra: string]: unknown;
}

/** A web search OpenAI's platform ran (the `web_search` tool). */
export interface ResponsesWebSearchCall {
  type: 'web_search_call';
  id: string;
  status: 'in_progress' | 'searching' | 'completed' | 'failed';
  /** `{type: "search", query, sources}`, `{type: "open_page", url}` or `{type: "find", url, pattern}`. */
  action?: { type: string; [extra: string]: unknown };
  [extra: string]: unknown;
}

/** Tools the client offers in `input` rather than in `tools` (Codex 0.171.0: the `additional_tools` item). */
export interface ResponsesAdditionalTools { type: 'additional_tools'; role?: string; tools: ResponsesTool[]; [extra: string]: unknown }

/** An earlier item by id, from a stored response. */
export interface ResponsesItemReference { type: 'item_reference'; id: string; [extra: string]: unknown }

/** An item of `input`. A client may send a type not listed here (built-in tool calls, newer items): readers keep a default. */
export type ResponsesInputItem =
  | ResponsesMessage
  | ResponsesFunctionCall
  | ResponsesFunctionCallOutput
  | ResponsesCustomToolCall
  | ResponsesCustomToolCallOutput
  | ResponsesLocalShellCall
  | ResponsesLocalShellCallOutput
  | ResponsesReasoning
  | ResponsesWebSearchCall
  | ResponsesAdditionalTools
  | ResponsesItemReference;

/** An item of a Response's `output`: each has its id (and, but for reasoning, its status). */
export type ResponsesOutputItem =
  | ResponsesOutputMessage
  | (ResponsesFunctionCall & { id: string })
  | (ResponsesCustomToolCall & { id: string })
  | (ResponsesLocalShellCall & { id: string })
  | (ResponsesReasoning & { id: string })
  | ResponsesWebSearchCall;

// ---- Tools ----

export interface ResponsesFunctionTool {
  type: 'function';
  name: string;
  description?: string | null;
  /** A JSON Schema of the arguments object. */
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
  [extra: string]: unknown;
}

/** A tool of free-form input, optionally constrained by a grammar (`{type: "grammar", syntax: "lark" | "regex", definition}`). */
export interface ResponsesCustomTool {
  type: 'custom';
  name: string;
  description?: string;
  format?: { type: 'text' } | { type: 'grammar'; syntax: 'lark' | 'regex'; definition: string };
  [extra: string]: unknown;
}

/** A group of function and custom tools under one name (Codex's `namespace` tools); its calls name the group in `namespace`. */
export interface ResponsesNamespaceTool {
  type: 'namespace';
  name: string;
  description?: string;
  tools: (ResponsesFunctionTool | ResponsesCustomTool)[];
  [extra: string]: unknown;
}

export interface ResponsesLocalShellTool { type: 'local_shell'; [extra: string]: unknown }

/** The web search tool, under its current and dated names. */
export interface ResponsesWebSearchTool {
  type: 'web_search' | 'web_search_preview' | 'web_search_2025_08_26' | 'web_search_preview_2025_03_11';
  filters?: { allowed_domains?: string[] | null; [extra: string]: unknown } | null;
  user_location?: Record<string, unknown> | null;
  search_context_size?: 'low' | 'medium' | 'high';
  [extra: string]: unknown;
}

/** Tools OpenAI's platform runs itself (beside web search), by type; their settings are not read here. */
export interface ResponsesPlatformTool {
  type: 'file_search' | 'code_interpreter' | 'image_generation' | 'mcp' | 'computer' | 'computer_use_preview' | 'tool_search' | 'shell' | 'apply_patch';
  [extra: string]: unknown;
}

/** A tool of `tools` (or of an `additional_tools` item). A client may send a type not listed here: readers keep a default. */
export type ResponsesTool = ResponsesFunctionTool | ResponsesCustomTool | ResponsesNamespaceTool | ResponsesLocalShellTool | ResponsesWebSearchTool | ResponsesPlatformTool;

/** Which tool the model must (or must not) call: a function or custom tool by name (and group), or a platform tool by type. */
export type ResponsesToolChoice =
  | 'none'
  | 'auto'
  | 'required'
  | { type: 'function' | 'custom'; name: string; namespace?: string; [extra: string]: unknown }
  | { type: 'allowed_tools'; mode: 'auto' | 'required'; tools: Record<string, unknown>[]; [extra: string]: unknown }
  | { type: ResponsesWebSearchTool['type'] | ResponsesPlatformTool['type']; [extra: string]: unknown };

// ---- The request ----

/** `text.format`: plain text, any JSON object, or JSON that follows a schema. */
export type ResponsesTextFormat =
  | { type: 'text'; [extra: string]: unknown }
  | { type: 'json_object'; [extra: string]: unknown }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; description?: string; strict?: boolean | null; [extra: string]: unknown };

export interface ResponsesTextConfig { format?: ResponsesTextFormat | null; verbosity?: 'low' | 'medium' | 'high' | null; [extra: string]: unknown }

export interface ResponsesReasoningConfig {
  effort?: 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max' | null;
  summary?: 'auto' | 'concise' | 'detailed' | null;
  /** The older name of `summary`. */
  generate_summary?: 'auto' | 'concise' | 'detailed' | null;
  [extra: string]: unknown;
}

/** A Responses request body (CreateResponse): the client's, checked by the route's schema, or a provider's translation of a chat request. */
export interface ResponsesRequest {
  model: string;
  input?: string | ResponsesInputItem[];
  instructions?: string | null;
  tools?: ResponsesTool[] | null;
  tool_choice?: ResponsesToolChoice | null;
  parallel_tool_calls?: boolean | null;
  text?: ResponsesTextConfig | null;
  reasoning?: ResponsesReasoningConfig | null;
  /** Extra outputs asked for, e.g. `reasoning.encrypted_content`, `message.output_text.logprobs`. */
  include?: string[] | null;
  stream?: boolean | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  store?: boolean | null;
  background?: boolean | null;
  previous_response_id?: string | null;
  conversation?: string | { id: string; [extra: string]: unknown } | null;
  prompt?: { id: string; version?: string | null; variables?: Record<string, unknown> | null; [extra: string]: unknown } | null;
  /** Up to 16 pairs of strings. */
  metadata?: Record<string, string> | null;
  user?: string | null;
  service_tier?: string | null;
  truncation?: 'auto' | 'disabled' | null;
  prompt_cache_key?: string | null;
  safety_identifier?: string | null;
  [extra: string]: unknown;
}
