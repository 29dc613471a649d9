import { randomBytes } from 'node:crypto';
import type { ConverseResponse, ConverseStreamOutput, ServiceTier, TokenUsage } from '@aws-sdk/client-bedrock-runtime';
import { AnswerPriceFacts, ChatChunk, ChatChunkChoice, ChatCompletion, ChatToolCall, ChatUsage, PRICE_FACTS } from '../chat-contract';
import { UpstreamFailure } from '../upstream-failure';

type Json = Record<string, unknown>;

/**
 * Bedrock's usage in chat's token classes (DESIGN.md section 11): the prompt is every input token, cache reads
 * (`cacheReadInputTokens`, cached) and writes (`cacheWriteInputTokens`, cache-write) included, as Converse's
 * `inputTokens` counts neither. A count that is missing or not a whole number reads 0.
 */
export function chatUsageOf(usage: Partial<TokenUsage> | undefined): ChatUsage {
  const cacheRead = count(usage?.cacheReadInputTokens);
  const cacheWrite = count(usage?.cacheWriteInputTokens);
  const prompt = count(usage?.inputTokens) + cacheRead + cacheWrite;
  const completion = count(usage?.outputTokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead, cache_write_tokens: cacheWrite },
  };
}

/**
 * The tier that served an answer, from Converse's `serviceTier` (or ConverseStream's metadata event's): its `type`
 * (priority, default, flex, reserved: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ServiceTier.html)
 * as the answer's PRICE_FACTS; undefined when the answer names none.
 */
export function bedrockPriceFacts(serviceTier: Partial<ServiceTier> | undefined): AnswerPriceFacts | undefined {
  const type = serviceTier?.type;
  return typeof type === 'string' && type.length > 0 ? { service_tier: type } : undefined;
}

/** Converse's stopReason as chat's finish_reason. */
export function finishReasonOf(stopReason: unknown): string {
  switch (stopReason) {
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'guardrail_intervened':
    case 'content_filtered':
      return 'content_filter';
    default:
      // end_turn, stop_sequence, and reasons Bedrock may add
      return 'stop';
  }
}

/**
 * A Converse answer as a chat.completion: text blocks into `content`, reasoningContent into `reasoning_content`,
 * toolUse blocks into `tool_calls` (input as JSON arguments), stopReason into finish_reason, usage into chat's
 * token classes, serviceTier into PRICE_FACTS. Converse names no answer id: the AWS request id stands for it.
 */
export function completionOfConverse(answer: ConverseResponse, model: string, requestId: string | undefined): ChatCompletion {
  const content: unknown = answer.output?.message?.content;
  const blocks: Json[] = Array.isArray(content) ? (content as Json[]) : [];
  let text = '';
  let reasoning = '';
  const toolCalls: ChatToolCall[] = [];
  for (const block of blocks) {
    if (typeof block?.text === 'string') text += block.text;
    const reasoningText = ((block?.reasoningContent as Json | undefined)?.reasoningText as Json | undefined)?.text;
    if (typeof reasoningText === 'string') reasoning += reasoningText;
    const toolUse = block?.toolUse as Json | undefined;
    if (toolUse && typeof toolUse === 'object') {
      toolCalls.push({ id: idOf(toolUse.toolUseId), type: 'function', function: { name: String(toolUse.name ?? ''), arguments: JSON.stringify(toolUse.input ?? {}) } });
    }
  }
  const facts = bedrockPriceFacts(answer.serviceTier);
  return {
    ...(facts && { [PRICE_FACTS]: facts }),
    id: chatId(requestId),
    object: 'chat.completion',
    created: nowSeconds(),
    model,
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
        finish_reason: finishReasonOf(answer.stopReason),
      },
    ],
    usage: chatUsageOf(answer.usage),
  };
}

/**
 * A ConverseStream's events as chat chunks: messageStart the role, contentBlockStart of a toolUse the tool call's
 * id and name, contentBlockDelta its text, reasoning text or tool-input pieces, messageStop the finish reason,
 * metadata the usage (a chunk with `choices: []`, as OpenAI sends it) and the tier that served it (PRICE_FACTS). The stream is complete at metadata, or when
 * it ends after messageStop (an upstream that reports no usage); an end before either is an UpstreamFailure.
 * Exception events reach here as the SDK's thrown errors (the transport maps them).
 */
export async function* chunksOfConverseStream(name: string, model: string, requestId: string | undefined, events: AsyncIterable<ConverseStreamOutput>): AsyncGenerator<ChatChunk> {
  const id = chatId(requestId);
  const created = nowSeconds();
  const chunk = (choices: ChatChunkChoice[], extra: Partial<ChatChunk> = {}): ChatChunk => ({ id, object: 'chat.completion.chunk', created, model, choices, ...extra });
  const delta = (d: Json, finish: string | null = null): ChatChunkChoice[] => [{ index: 0, delta: d, logprobs: null, finish_reason: finish }];
  /** The chat tool-call index of each content block that is a toolUse. */
  const toolIndex = new Map<number, number>();
  let stopped = false;
  for await (const event of events) {
    if (event.messageStart) {
      yield chunk(delta({ role: 'assistant', content: '' }));
    } else if (event.contentBlockStart) {
      const toolUse = event.contentBlockStart.start?.toolUse;
      if (toolUse) {
        const call = toolIndex.size;
        toolIndex.set(Number(event.contentBlockStart.contentBlockIndex), call);
        yield chunk(delta({ tool_calls: [{ index: call, id: idOf(toolUse.toolUseId), type: 'function', function: { name: String(toolUse.name ?? ''), arguments: '' } }] }));
      }
    } else if (event.contentBlockDelta) {
      const d = event.contentBlockDelta.delta;
      const index = Number(event.contentBlockDelta.contentBlockIndex);
      if (typeof d?.text === 'string') yield chunk(delta({ content: d.text }));
      else if (typeof d?.reasoningContent?.text === 'string') yield chunk(delta({ reasoning_content: d.reasoningContent.text }));
      else if (typeof d?.toolUse?.input === 'string' && toolIndex.has(index)) {
        yield chunk(delta({ tool_calls: [{ index: toolIndex.get(index), function: { arguments: d.toolUse.input } }] }));
      }
    } else if (event.messageStop) {
      stopped = true;
      yield chunk(delta({}, finishReasonOf(event.messageStop.stopReason)));
    } else if (event.metadata) {
      const facts = bedrockPriceFacts(event.metadata.serviceTier);
      yield chunk([], { usage: chatUsageOf(event.metadata.usage), ...(facts && { [PRICE_FACTS]: facts }) });
      return;
    }
    // contentBlockStop, and events Bedrock may add: nothing for chat.
  }
  if (!stopped) throw new UpstreamFailure('bad_response', `Upstream ${name} ended the stream before messageStop.`);
}

function chatId(requestId: string | undefined): string {
  return `chatcmpl-${typeof requestId === 'string' && requestId !== '' ? requestId : randomBytes(12).toString('hex')}`;
}

/** A tool call's id; Converse always sends one, and one is made should it not. */
function idOf(toolUseId: unknown): string {
  return typeof toolUseId === 'string' && toolUseId !== '' ? toolUseId : `tooluse_${randomBytes(12).toString('hex')}`;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0;
}
