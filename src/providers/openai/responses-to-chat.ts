import { AnswerPriceFacts, ChatChunk, ChatChunkChoice, ChatCompletion, ChatDelta, ChatToolCall, ChatUsage, NATIVE_ANSWER, NATIVE_EVENT, PARTIAL_USAGE, PRICE_FACTS } from '../chat-contract';
import { eventObject, type SseReader } from '../http/sse-reader';
import { UpstreamFailure } from '../upstream-failure';
import type { ResponsesResponse, ResponsesUsage } from './responses-events';
import type { ResponsesOutputItem } from './responses-wire';

type Json = Record<string, unknown>;

/** The events that end a Response stream, each carrying the whole Response (usage included). */
const TERMINAL = new Set(['response.completed', 'response.incomplete']);

/**
 * A Response as a chat.completion (DESIGN.md section 12): output_text parts into `content`, refusals into `refusal`,
 * reasoning summaries into `reasoning_content`, function_call and custom_tool_call items into `tool_calls` (chat's
 * function and custom shapes), the status into finish_reason, usage into chat's token classes and what the answer
 * says of its price (its `service_tier`; PRICE_FACTS: the web searches it ran). The Response itself is kept under
 * NATIVE_ANSWER when `native` (a Responses client's pass-through); a chat or Messages client's translated answer has
 * none, or its route would relay the Response as its own dialect's answer.
 */
export function completionOfResponse(response: ResponsesResponse, native: boolean): ChatCompletion {
  const output: ResponsesOutputItem[] = Array.isArray(response.output) ? response.output : [];
  let text = '';
  let refusal = '';
  let reasoning = '';
  const toolCalls: ChatToolCall[] = [];
  for (const item of output) {
    if (item?.type === 'message' && Array.isArray(item.content)) {
      for (const part of item.content) {
        if (part?.type === 'output_text' && typeof part.text === 'string') text += part.text;
        else if (part?.type === 'refusal' && typeof part.refusal === 'string') refusal += part.refusal;
      }
    } else if (item?.type === 'reasoning' && Array.isArray(item.summary)) {
      for (const part of item.summary) if (typeof part?.text === 'string') reasoning += part.text;
    } else {
      const call = toolCallOf(item);
      if (call) toolCalls.push(call);
    }
  }
  const completion: ChatCompletion = {
    id: chatId(response.id),
    object: 'chat.completion',
    created: typeof response.created_at === 'number' ? response.created_at : nowSeconds(),
    model: String(response.model ?? ''),
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && (toolCalls.length > 0 || refusal !== '') ? null : text,
          refusal: refusal === '' ? null : refusal,
          ...(reasoning !== '' && { reasoning_content: reasoning }),
          ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
        },
        logprobs: null,
        finish_reason: finishReasonOf(response, toolCalls.length > 0),
      },
    ],
  };
  const usage = chatUsageOfResponse(response.usage);
  if (usage) completion.usage = usage;
  if (typeof response.service_tier === 'string') completion.service_tier = response.service_tier;
  if (native) completion[NATIVE_ANSWER] = response;
  const searches = webSearches(output);
  if (searches > 0) completion[PRICE_FACTS] = { tool_uses: { web_search: searches } };
  return completion;
}

/**
 * A Responses stream (`event:` lines named by each event's type) as chat chunks: text, refusal and reasoning-summary
 * deltas, tool calls named when their item is added and their arguments (a custom tool's input) in deltas, the finish
 * reason, usage and tier at response.completed or response.incomplete (also PARTIAL_USAGE: a Response reports its
 * usage only there). The web searches run so far ride on the chunk of each finished web_search_call item
 * (PRICE_FACTS, cumulative). When `native` (pass-through), every chunk keeps the event it was read from
 * (NATIVE_EVENT) and every event gives a chunk, so that a Responses client gets them all; translated for a chat or
 * Messages client, an event that adds nothing to the chat view gives no chunk. An `error` or `response.failed` event, or a stream that ends
 * before its terminal event, is an UpstreamFailure.
 */
export async function* chunksOfResponseEvents(name: string, events: SseReader, native: boolean): AsyncGenerator<ChatChunk> {
  let id = 'chatcmpl-openai';
  let model = '';
  const created = nowSeconds();
  /** The chat tool-call index of each output item that is a tool call, by output_index. */
  const toolIndex = new Map<number, number>();
  let searches = 0;
  for await (const { event, data: raw } of events) {
    const data = eventObject(name, raw);
    const type = typeof data.type === 'string' ? data.type : (event ?? '');
    const chunk = (delta: ChatDelta | null, extra: Partial<ChatChunk> = {}): ChatChunk => {
      const choices: ChatChunkChoice[] = delta ? [{ index: 0, delta, logprobs: null, finish_reason: null }] : [];
      const c: ChatChunk = { id, object: 'chat.completion.chunk', created, model, choices, ...extra };
      if (native) c[NATIVE_EVENT] = { event: type, raw, data };
      return c;
    };
    if (type === 'response.created') {
      const response = (data.response ?? {}) as Partial<ResponsesResponse>;
      id = chatId(response.id);
      model = String(response.model ?? '');
      yield chunk({ role: 'assistant', content: '' });
    } else if (TERMINAL.has(type)) {
      const response = (data.response ?? {}) as ResponsesResponse;
      const usage = chatUsageOfResponse(response.usage);
      const last = chunk(null, usage ? { usage } : {});
      last.choices = [{ index: 0, delta: {}, logprobs: null, finish_reason: finishReasonOf(response, toolIndex.size > 0) }];
      if (typeof response.service_tier === 'string') last.service_tier = response.service_tier;
      if (usage) last[PARTIAL_USAGE] = usage;
      const total = webSearches(Array.isArray(response.output) ? response.output : []);
      if (total > 0) last[PRICE_FACTS] = { tool_uses: { web_search: Math.max(total, searches) } };
      yield last;
      events.complete();
      return;
    } else if (type === 'response.failed' || type === 'error') {
      throw new UpstreamFailure('server_error', `Upstream ${name} failed mid-stream: ${failureMessage(data)}`);
    } else if (type === 'response.output_item.added' || type === 'response.output_item.done') {
      const item = data.item as ResponsesOutputItem | undefined;
      const at = Number(data.output_index);
      const call = type === 'response.output_item.added' ? toolCallOf(item) : null;
      if (call) {
        toolIndex.set(at, toolIndex.size);
        yield chunk({ tool_calls: [{ index: toolIndex.get(at), ...emptied(call) }] });
      } else if (type === 'response.output_item.done' && item?.type === 'web_search_call') {
        searches += 1;
        const done = chunk(null);
        done[PRICE_FACTS] = { tool_uses: { web_search: searches } } satisfies AnswerPriceFacts;
        yield done;
      } else if (native) yield chunk(null);
    } else {
      const delta = deltaOf(type, data, toolIndex);
      if (delta || native) yield chunk(delta);
    }
  }
  throw new UpstreamFailure('bad_response', `Upstream ${name} ended the stream before response.completed.`);
}

/** What a delta event adds to the chat view (null: nothing, the event is relayed to a Responses client only). */
function deltaOf(type: string, data: Json, toolIndex: Map<number, number>): ChatDelta | null {
  const delta = typeof data.delta === 'string' ? data.delta : undefined;
  if (delta === undefined) return null;
  switch (type) {
    case 'response.output_text.delta':
      return { content: delta };
    case 'response.refusal.delta':
      return { refusal: delta };
    case 'response.reasoning_summary_text.delta':
      return { reasoning_content: delta };
    case 'response.function_call_arguments.delta': {
      const index = toolIndex.get(Number(data.output_index));
      return index === undefined ? null : { tool_calls: [{ index, function: { arguments: delta } }] };
    }
    case 'response.custom_tool_call_input.delta': {
      const index = toolIndex.get(Number(data.output_index));
      return index === undefined ? null : { tool_calls: [{ index, custom: { input: delta } }] };
    }
    default:
      return null;
  }
}

/**
 * Responses usage in chat's token classes (DESIGN.md section 12): input_tokens are the prompt, of which
 * input_tokens_details.cached_tokens cached; output_tokens the completion, of which
 * output_tokens_details.reasoning_tokens reasoning. Undefined without usage (the gateway then counts); a count that
 * is not a whole number reads 0 (billing's tokenUsageOf checks the totals again).
 */
export function chatUsageOfResponse(usage: ResponsesUsage | null | undefined): ChatUsage | undefined {
  if (!usage || typeof usage !== 'object') return undefined;
  const prompt = count(usage.input_tokens);
  const completion = count(usage.output_tokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: count(usage.input_tokens_details?.cached_tokens) },
    completion_tokens_details: { reasoning_tokens: count(usage.output_tokens_details?.reasoning_tokens) },
  };
}

/** A function or custom tool call item as chat's tool call (`call_id` is the id a tool result names). */
function toolCallOf(item: ResponsesOutputItem | undefined): ChatToolCall | null {
  if (item?.type === 'function_call') {
    return { id: String(item.call_id ?? item.id ?? ''), type: 'function', function: { name: String(item.name ?? ''), arguments: typeof item.arguments === 'string' ? item.arguments : '' } };
  }
  if (item?.type === 'custom_tool_call') {
    return { id: String(item.call_id ?? item.id ?? ''), type: 'custom', custom: { name: String(item.name ?? ''), input: typeof item.input === 'string' ? item.input : '' } };
  }
  return null;
}

/** A call as its stream announces it: named, its arguments (or input) to come in deltas. */
function emptied(call: ChatToolCall): ChatToolCall {
  if (call.type === 'custom') return { ...call, custom: { ...(call.custom as Json), input: '' } };
  return { ...call, function: { ...call.function, arguments: '' } };
}

/** The chat finish_reason of a Response: cut by its output limit `length`, by the content filter `content_filter`. */
function finishReasonOf(response: Partial<ResponsesResponse>, calledTools: boolean): string {
  if (response.status === 'incomplete') {
    const reason = response.incomplete_details?.reason;
    return reason === 'content_filter' ? 'content_filter' : 'length';
  }
  return calledTools ? 'tool_calls' : 'stop';
}

/** The web searches OpenAI's platform ran for the answer: each web_search_call item is one use of the tool (DESIGN.md 12.2). */
function webSearches(output: ResponsesOutputItem[]): number {
  return output.filter((item) => item?.type === 'web_search_call').length;
}

function failureMessage(data: Json): string {
  const response = data.response as Partial<ResponsesResponse> | undefined;
  const message = response?.error?.message ?? data.message;
  return typeof message === 'string' && message !== '' ? message : String(data.type ?? 'error event');
}


function count(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

/** A chat id from a response id (`resp_…` → `chatcmpl-resp_…`): the same answer, traceable on both sides. */
function chatId(responseId: unknown): string {
  return typeof responseId === 'string' && responseId !== '' ? `chatcmpl-${responseId}` : `chatcmpl-resp_${Date.now().toString(16)}`;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
