import type { MessageUsage, StopReason } from './anthropic-wire';

/**
 * A Messages request on the wire (https://docs.anthropic.com/en/api/messages), as a client sends it to the
 * Messages route and as the route passes it through to an `anthropic` upstream. A client's body is checked only
 * where it is read: the types say what Anthropic documents, readers still check what they read (the route answers
 * a 400 naming the field). Unknown fields are kept, for the pass-through.
 */

/** A prompt-cache breakpoint (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching). */
export interface CacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

export interface TextBlockParam {
  type: 'text';
  text: string;
  cache_control?: CacheControl | null;
  citations?: unknown[] | null;
}

/** An image: base64 data with its media type, a URL, or a file of Anthropic's Files API. */
export type ImageSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string } | { type: 'file'; file_id: string };

export interface ImageBlockParam {
  type: 'image';
  source: ImageSource;
  cache_control?: CacheControl | null;
}

/** A PDF or text document (base64, URL, plain text, content blocks, or a file of the Files API). */
export interface DocumentBlockParam {
  type: 'document';
  source: { type: 'base64' | 'url' | 'text' | 'content' | 'file'; [field: string]: unknown };
  title?: string | null;
  context?: string | null;
  citations?: { enabled?: boolean } | null;
  cache_control?: CacheControl | null;
}

/** Search results the client supplies, citable as documents are. */
export interface SearchResultBlockParam {
  type: 'search_result';
  source: string;
  title: string;
  content: TextBlockParam[];
  citations?: { enabled?: boolean } | null;
  cache_control?: CacheControl | null;
}

/** A tool call of an earlier answer, sent back; `input` is the arguments object. */
export interface ToolUseBlockParam {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
  cache_control?: CacheControl | null;
}

/** A tool's result, tied to its call by `tool_use_id`: text, or blocks. */
export interface ToolResultBlockParam {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | (TextBlockParam | ImageBlockParam | DocumentBlockParam | SearchResultBlockParam)[] | null;
  is_error?: boolean | null;
  cache_control?: CacheControl | null;
}

/** The model's earlier reasoning, sent back as it came (its signature proves it unchanged). */
export interface ThinkingBlockParam {
  type: 'thinking';
  thinking: string;
  signature: string;
}

export interface RedactedThinkingBlockParam {
  type: 'redacted_thinking';
  data: string;
}

/** A server tool's call (run by Anthropic) of an earlier answer. */
export interface ServerToolUseBlockParam {
  type: 'server_tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
  cache_control?: CacheControl | null;
}

/** Web search's results of an earlier answer: the results, or the error it met. */
export interface WebSearchToolResultBlockParam {
  type: 'web_search_tool_result';
  tool_use_id: string;
  content: { type: 'web_search_result'; url: string; title: string; encrypted_content: string; page_age?: string | null }[] | { type: 'web_search_tool_result_error'; error_code: string };
  cache_control?: CacheControl | null;
}

/** The results of Anthropic's other server tools, MCP connector and container files: only Anthropic's platform reads them. */
export interface PlatformBlockParam {
  type:
    | 'web_fetch_tool_result'
    | 'code_execution_tool_result'
    | 'bash_code_execution_tool_result'
    | 'text_editor_code_execution_tool_result'
    | 'mcp_tool_use'
    | 'mcp_tool_result'
    | 'container_upload';
  [field: string]: unknown;
}

export type ContentBlockParam =
  | TextBlockParam
  | ImageBlockParam
  | DocumentBlockParam
  | SearchResultBlockParam
  | ToolUseBlockParam
  | ToolResultBlockParam
  | ThinkingBlockParam
  | RedactedThinkingBlockParam
  | ServerToolUseBlockParam
  | WebSearchToolResultBlockParam
  | PlatformBlockParam;

export interface UserMessageParam {
  role: 'user';
  content: string | ContentBlockParam[];
}

/** An earlier answer: text, tool calls, thinking (a last assistant message is a prefill the answer continues). */
export interface AssistantMessageParam {
  role: 'assistant';
  content: string | ContentBlockParam[];
}

/** Instructions mid-conversation, as Claude Code sends them: not in Anthropic's reference, taken by its API. */
export interface SystemMessageParam {
  role: 'system';
  content: string | TextBlockParam[];
}

export type MessageParam = UserMessageParam | AssistantMessageParam | SystemMessageParam;

/** A tool the client runs, described by a JSON Schema of its input (`type` absent or `custom`). */
export interface CustomTool {
  type?: 'custom' | null;
  name: string;
  description?: string;
  /** A JSON Schema of the input object. */
  input_schema: Record<string, unknown>;
  strict?: boolean;
  cache_control?: CacheControl | null;
}

/**
 * A typed tool, named by a dated type: Anthropic's client tools (`bash_20250124`, `text_editor_20250728`,
 * `computer_…`, `memory_…`: the client runs them, shaped for Claude's training) and its server tools
 * (`web_search_20250305`, `web_fetch_…`, `code_execution_…`, `tool_search_tool_…`, `mcp_toolset`: Anthropic runs them).
 */
export interface TypedTool {
  type: string;
  name: string;
  /** The most uses of a server tool in one request. */
  max_uses?: number | null;
  cache_control?: CacheControl | null;
  [field: string]: unknown;
}

export type MessagesTool = CustomTool | TypedTool;

/** Which tool the model must (or must not) call; `disable_parallel_tool_use` asks for one call at most. */
export type MessagesToolChoice =
  | { type: 'auto'; disable_parallel_tool_use?: boolean | null }
  | { type: 'any'; disable_parallel_tool_use?: boolean | null }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean | null }
  | { type: 'none' };

/** Extended thinking with a budget (deprecated from Claude 4.6), adaptive thinking, or none. */
export type ThinkingConfig = { type: 'enabled'; budget_tokens: number; display?: string } | { type: 'adaptive'; display?: string } | { type: 'disabled' };

/** A Messages request body (the create and count_tokens operations; count_tokens needs no max_tokens). */
export interface MessagesRequestBody {
  model: string;
  messages: MessageParam[];
  max_tokens?: number;
  system?: string | TextBlockParam[] | null;
  metadata?: { user_id?: string | null } | null;
  stop_sequences?: string[] | null;
  stream?: boolean | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  tools?: MessagesTool[] | null;
  tool_choice?: MessagesToolChoice | null;
  thinking?: ThinkingConfig | null;
  /** `auto` or `standard_only` (https://docs.claude.com/en/api/service-tiers). */
  service_tier?: string | null;
  /** Fast mode (`fast`, with its beta header) and the region of inference (`us`, `global`). */
  speed?: string | null;
  inference_geo?: string | null;
  [field: string]: unknown;
}

// ---- The answer, as the route writes it ----

export interface TextBlock {
  type: 'text';
  text: string;
}

export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** A Message the route writes from a chat answer: text and tool calls (a chat upstream's reasoning is not sent). */
export interface Message {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: (TextBlock | ToolUseBlock)[];
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: MessageUsage;
}

// ---- The stream's events (https://docs.anthropic.com/en/api/messages-streaming), each named by its type ----

export type MessageStreamEvent =
  | { type: 'message_start'; message: Message }
  | { type: 'content_block_start'; index: number; content_block: TextBlock | ToolUseBlock }
  | { type: 'content_block_delta'; index: number; delta: { type: 'text_delta'; text: string } | { type: 'input_json_delta'; partial_json: string } }
  | { type: 'content_block_stop'; index: number }
  | { type: 'message_delta'; delta: { stop_reason: StopReason; stop_sequence: string | null }; usage: MessageUsage }
  | { type: 'message_stop' }
  | { type: 'ping' };
