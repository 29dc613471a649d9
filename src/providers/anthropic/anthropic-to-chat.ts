import { ChatChunk, ChatCompletion, ChatToolCall, ChatUsage, NATIVE_ANSWER, NATIVE_EVENT, PARTIAL_USAGE, PRICE_FACTS } from '../chat-contract';
import { eventObject, type SseReader } from '../http/sse-reader';
import { UpstreamFailure } from '../upstream-failure';
import { AnthropicMessage, chatUsageOfMessage, ContentBlock, finishReasonOf, MessageUsage, mergedUsage, newId, priceFactsOfUsage } from './anthropic-wire';

type Json = Record<string, unknown>;

/**
 * A Message as a chat.completion (DESIGN.md section 11): text blocks into `content`, thinking into
 * `reasoning_content`, tool_use blocks into `tool_calls` (input as JSON arguments), stop_reason into
 * finish_reason, usage into chat's token classes and what it says of the price (PRICE_FACTS: tier, speed,
 * geography, server tools' uses). The Message itself is kept under NATIVE_ANSWER for a Messages client (pass-through).
 */
export function completionOfMessage(message: AnthropicMessage): ChatCompletion {
  const blocks: ContentBlock[] = Array.isArray(message.content) ? message.content : [];
  let text = '';
  let reasoning = '';
  const toolCalls: ChatToolCall[] = [];
  for (const block of blocks) {
    if (block?.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block?.type === 'thinking' && typeof block.thinking === 'string') reasoning += block.thinking;
    else if (block?.type === 'tool_use') {
      toolCalls.push({ id: String(block.id ?? newId('toolu')), type: 'function', function: { name: String(block.name ?? ''), arguments: JSON.stringify(block.input ?? {}) } });
    }
  }
  const completion: ChatCompletion = {
    id: chatId(message.id),
    object: 'chat.completion',
    created: nowSeconds(),
    model: String(message.model ?? ''),
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && toolCalls.length > 0 ? null : text,
          refusal: null,
          ...(reasoning !== '' && { reasoning_content: reasoning }),
          ...(toolCalls.length > 0 && { tool_calls: toolCalls }),
        },
        logprobs: null,
        finish_reason: finishReasonOf(message.stop_reason),
      },
    ],
    usage: chatUsageOfMessage(message.usage),
  };
  completion[NATIVE_ANSWER] = message;
  withPriceFacts(completion, message.usage);
  return completion;
}

/**
 * A Messages stream (`event:` lines: message_start, content_block_start/delta/stop, message_delta,
 * message_stop, ping, error) as chat chunks: text and thinking deltas, tool calls named at their block's start
 * and their arguments in input_json_delta pieces, the finish reason and the final usage at message_delta.
 * message_start's usage is the partial usage (PARTIAL_USAGE) until then. The chunks of both events carry what their
 * usage says of the price (PRICE_FACTS: message_start the tier, speed and geography; message_delta the whole usage so
 * far, server tools' cumulative uses included). Every chunk keeps the event it was
 * read from (NATIVE_EVENT), and every event gives a chunk, so that a Messages client gets them all. Ends at
 * message_stop; an `error` event, or a stream that ends before message_stop, is an UpstreamFailure.
 */
export async function* chunksOfMessageEvents(name: string, events: SseReader): AsyncGenerator<ChatChunk> {
  let id = 'chatcmpl-anthropic';
  let model = '';
  const created = nowSeconds();
  let startUsage: Partial<MessageUsage> | undefined;
  /** The chat tool-call index of each content block that is a tool_use. */
  const toolIndex = new Map<number, number>();
  let raw = '';
  const chunk = (choices: ChatChunk['choices'], event: string, data: Json, extra: Partial<ChatChunk> = {}): ChatChunk => {
    const c: ChatChunk = { id, object: 'chat.completion.chunk', created, model, choices, ...extra };
    c[NATIVE_EVENT] = { event, raw, data };
    return c;
  };
  const delta = (d: Json, finish: string | null = null) => [{ index: 0, delta: d, logprobs: null, finish_reason: finish }];
  for await (const { event, data: text } of events) {
    const data = eventObject(name, text);
    raw = text;
    const type = typeof data.type === 'string' ? data.type : (event ?? '');
    switch (type) {
      case 'message_start': {
        const message = (data.message ?? {}) as AnthropicMessage;
        id = chatId(message.id);
        model = String(message.model ?? '');
        startUsage = message.usage;
        const started = chunk(delta({ role: 'assistant', content: '' }), type, data);
        started[PARTIAL_USAGE] = chatUsageOfMessage(startUsage);
        yield withPriceFacts(started, startUsage);
        break;
      }
      case 'content_block_start': {
        const block = (data.content_block ?? {}) as ContentBlock;
        const index = Number(data.index);
        if (block.type === 'tool_use') {
          const call = toolIndex.size;
          toolIndex.set(index, call);
          yield chunk(delta({ tool_calls: [{ index: call, id: String(block.id ?? newId('toolu')), type: 'function', function: { name: String(block.name ?? ''), arguments: '' } }] }), type, data);
        } else {
          yield chunk([], type, data);
        }
        break;
      }
      case 'content_block_delta': {
        const d = (data.delta ?? {}) as Json;
        if (d.type === 'text_delta' && typeof d.text === 'string') yield chunk(delta({ content: d.text }), type, data);
        else if (d.type === 'thinking_delta' && typeof d.thinking === 'string') yield chunk(delta({ reasoning_content: d.thinking }), type, data);
        else if (d.type === 'input_json_delta' && typeof d.partial_json === 'string' && toolIndex.has(Number(data.index))) {
          yield chunk(delta({ tool_calls: [{ index: toolIndex.get(Number(data.index)), function: { arguments: d.partial_json } }] }), type, data);
        } else yield chunk([], type, data);
        break;
      }
      case 'message_delta': {
        const merged = mergedUsage(startUsage, data.usage as Partial<MessageUsage> | undefined);
        const usage: ChatUsage = chatUsageOfMessage(merged);
        const stop = ((data.delta ?? {}) as Json).stop_reason;
        yield withPriceFacts(chunk(delta({}, finishReasonOf(stop)), type, data, { usage }), merged);
        break;
      }
      case 'message_stop':
        yield chunk([], type, data);
        events.complete();
        return;
      case 'error': {
        const error = (data.error ?? {}) as Json;
        const message = typeof error.message === 'string' ? error.message : 'error event';
        throw new UpstreamFailure('server_error', `Upstream ${name} failed mid-stream: ${message}`);
      }
      default:
        // ping, content_block_stop, and events Anthropic may add: relayed to a Messages client, nothing for chat.
        yield chunk([], type, data);
    }
  }
  throw new UpstreamFailure('bad_response', `Upstream ${name} ended the stream before message_stop.`);
}

/** The answer or chunk, with what the usage block says of its price when it says anything. */
function withPriceFacts<T extends ChatCompletion | ChatChunk>(answer: T, usage: Partial<MessageUsage> | undefined): T {
  const facts = priceFactsOfUsage(usage);
  if (facts) answer[PRICE_FACTS] = facts;
  return answer;
}


/** A chat id from a message id (`msg_…` → `chatcmpl-msg_…`): the same answer, traceable on both sides. */
function chatId(messageId: unknown): string {
  return typeof messageId === 'string' && messageId !== '' ? `chatcmpl-${messageId}` : `chatcmpl-${newId('msg')}`;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
