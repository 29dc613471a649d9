import { randomBytes } from 'node:crypto';
import { separatesCacheWrite1h, tokenUsageOf } from '../billing/request-cost';
import { costOf } from '../chat/chat-usage';
import { ChatCompletion, ChatMessage, ChatUsage } from '../providers/chat-contract';
import type { ResponsesError, ResponsesResponse, ResponsesUsage } from '../providers/openai/responses-events';
import type {
  ResponsesItemStatus,
  ResponsesLocalShellAction,
  ResponsesOutputContent,
  ResponsesOutputItem,
  ResponsesOutputMessage,
  ResponsesOutputText,
} from '../providers/openai/responses-wire';
import { ResponseEcho } from './responses-request.pipe';
import { LocalShellArguments, ToolShape, ToolShapes } from './responses-tools';

/** An OpenAI-style object id: `resp_…`, `msg_…`, `fc_…` (function calls), `ctc_…` (custom tool calls), `lsh_…` (local shell calls). */
export function newId(prefix: 'resp' | 'msg' | 'fc' | 'ctc' | 'lsh'): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

/** What every state of one Response shares: its id, creation time, catalog model and the request's echo. */
export interface ResponseBase {
  id: string;
  createdAt: number;
  model: string;
  echo: ResponseEcho;
  /** What each function offered upstream stands for (responses-tools.ts). */
  toolShapes: ToolShapes;
}

/** The states a Response of this gateway goes through (it is never queued or cancelled). */
export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export interface ResponseState {
  status: ResponseStatus;
  output: ResponsesOutputItem[];
  /** The upstream's chat usage block, when it sent one. */
  usage?: ChatUsage | null;
  incompleteReason?: string | null;
  error?: ResponsesError | null;
}

export function newResponseBase(model: string, echo: ResponseEcho, toolShapes: ToolShapes = new Map()): ResponseBase {
  return { id: newId('resp'), createdAt: Math.floor(Date.now() / 1000), model, echo, toolShapes };
}

/** The Response object (OpenAI's `Response` schema) in the given state. */
export function responseObject(base: ResponseBase, state: ResponseState): ResponsesResponse {
  const usage = responseUsage(state.usage);
  return {
    id: base.id,
    object: 'response',
    created_at: base.createdAt,
    status: state.status,
    ...(state.status === 'completed' ? { completed_at: Math.floor(Date.now() / 1000) } : {}),
    background: false,
    error: state.error ?? null,
    incomplete_details: state.incompleteReason ? { reason: state.incompleteReason } : null,
    model: base.model,
    output: state.output,
    previous_response_id: null,
    reasoning: null,
    store: false,
    truncation: 'disabled',
    ...base.echo,
    ...(usage ? { usage } : {}),
  };
}

/** Chat's finish_reason as the Response's status and incomplete reason. */
export function statusOf(finishReason: unknown): { status: 'completed' | 'incomplete'; incompleteReason: 'max_output_tokens' | 'content_filter' | null } {
  if (finishReason === 'length') return { status: 'incomplete', incompleteReason: 'max_output_tokens' };
  if (finishReason === 'content_filter') return { status: 'incomplete', incompleteReason: 'content_filter' };
  return { status: 'completed', incompleteReason: null };
}

export function outputTextPart(text: string): ResponsesOutputText {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

export function messageItem(id: string, status: ResponsesItemStatus, content: ResponsesOutputContent[]): ResponsesOutputMessage {
  return { id, type: 'message', status, role: 'assistant', content };
}

/** A chat tool call: its id, the function named upstream, and the arguments as JSON text. */
export interface CallParts {
  callId: string;
  name: string;
  arguments: string;
}

/** What a chat function call stands for: the offered tool of that name, or a plain function (an upstream may name one it was not offered). */
export function toolShapeOf(shapes: ToolShapes, chatName: string): ToolShape {
  return shapes.get(chatName) ?? { kind: 'function', name: chatName };
}

/** The id prefix of a tool call's output item. */
export function callItemPrefix(shape: ToolShape): 'fc' | 'ctc' | 'lsh' {
  return shape.kind === 'custom' ? 'ctc' : shape.kind === 'local_shell' ? 'lsh' : 'fc';
}

/**
 * A chat tool call as the output item of the tool it stands for: `function_call` (with its `namespace` for a
 * tool of a group), `custom_tool_call` with the free-form `input`, or `local_shell_call` with its exec action.
 */
export function toolCallItem(id: string, status: ResponsesItemStatus, call: CallParts, shape: ToolShape): ResponsesOutputItem {
  const namespace = shape.namespace ? { namespace: shape.namespace } : {};
  switch (shape.kind) {
    case 'custom':
      return { id, type: 'custom_tool_call', status, call_id: call.callId, name: shape.name, input: customInput(call.arguments), ...namespace };
    case 'local_shell':
      return { id, type: 'local_shell_call', status, call_id: call.callId, action: localShellAction(call.arguments) };
    default:
      return { id, type: 'function_call', status, call_id: call.callId, name: shape.name, arguments: call.arguments, ...namespace };
  }
}

/** A custom tool's input: the `input` string of the arguments; arguments of another shape are passed on as their text. */
export function customInput(args: string): string {
  const parsed = parsedArguments<{ input: string }>(args);
  return typeof parsed?.input === 'string' ? parsed.input : args;
}

function localShellAction(args: string): ResponsesLocalShellAction {
  const parsed = parsedArguments<LocalShellArguments>(args) ?? {};
  const command = Array.isArray(parsed.command) ? parsed.command.filter((part): part is string => typeof part === 'string') : [];
  return {
    type: 'exec',
    command,
    env: {},
    ...(typeof parsed.workdir === 'string' ? { working_directory: parsed.workdir } : {}),
    ...(typeof parsed.timeout_ms === 'number' ? { timeout_ms: parsed.timeout_ms } : {}),
  };
}

/**
 * A tool call's arguments, parsed: the model's JSON object, which should hold the fields of T; the fields are of
 * any type (or absent) until their reader checks them.
 */
function parsedArguments<T extends object>(text: string): { [name in keyof T]?: unknown } | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** A non-streamed chat.completion (its first choice) as the Response it answers. */
export function responseFromCompletion(base: ResponseBase, completion: ChatCompletion): ResponsesResponse {
  const choice = Array.isArray(completion.choices) ? completion.choices[0] : undefined;
  const message: ChatMessage = choice?.message ?? {};
  const { status, incompleteReason } = statusOf(choice?.finish_reason);
  const content: ResponsesOutputContent[] = [];
  if (typeof message.content === 'string' && message.content !== '') content.push(outputTextPart(message.content));
  if (typeof message.refusal === 'string' && message.refusal !== '') content.push({ type: 'refusal', refusal: message.refusal });
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  const output: ResponsesOutputItem[] = [];
  if (content.length > 0 || calls.length === 0) output.push(messageItem(newId('msg'), status, content.length ? content : [outputTextPart('')]));
  for (const call of calls) {
    const parts = { callId: String(call?.id ?? ''), name: String(call?.function?.name ?? ''), arguments: String(call?.function?.arguments ?? '') };
    const shape = toolShapeOf(base.toolShapes, parts.name);
    output.push(toolCallItem(newId(callItemPrefix(shape)), 'completed', parts, shape));
  }
  return responseObject(base, { status, output, usage: completion.usage, incompleteReason });
}

/**
 * Chat's usage block in the Responses API's terms (ResponseUsage): the counts the request is billed on
 * (tokenUsageOf, which reads this shape back to the same classes). The audio classes have no field there; the
 * 1-hour cache writes (a part of cache_write_tokens) have one when the upstream tells them apart.
 */
export function responseUsage(usage: unknown): ResponsesUsage | null {
  const tokens = tokenUsageOf(usage);
  if (!tokens) return null;
  return {
    input_tokens: tokens.promptTokens,
    input_tokens_details: {
      cached_tokens: tokens.cachedTokens,
      cache_write_tokens: tokens.cacheWriteTokens,
      ...(separatesCacheWrite1h(usage) && { cache_write_1h_tokens: tokens.cacheWrite1hTokens }),
    },
    output_tokens: tokens.completionTokens,
    output_tokens_details: { reasoning_tokens: tokens.reasoningTokens },
    total_tokens: tokens.promptTokens + tokens.completionTokens,
    ...costOf(usage),
  };
}

