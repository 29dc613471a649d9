import type { InputUsage } from './fake-anthropic-cache';
import { offersCountedServerTool, SearchCall, searchBlocks } from './fake-anthropic-search';
import type { AnthropicReply, AnthropicUsage, FakeWebSearch } from './fake-anthropic-types';
import { fakeTokenCount, fitToolCalls, tokenGroups, tokenPieces } from './fake-tokens';

/**
 * The fake Anthropic's answers (fake-anthropic.ts): the blocks of a reply cut as the request says, the usage they
 * come with, and the events of its stream.
 */

/** An answer's blocks, why it stopped, its output tokens, and the web searches it made. */
export interface AnswerOutput {
  blocks: unknown[];
  stopReason: string;
  stopSequence: string | null;
  outputTokens: number;
  /** Searches run (`usage.server_tool_use.web_search_requests`). */
  searches: number;
  /** The input tokens the search results added (counted in usage.input_tokens, from message_delta when streamed). */
  searchInputTokens: number;
}

/** How the fake's service answers (FakeAnthropic's knobs): its tier, the geography when none is asked, fast mode's state. */
export interface ServiceState {
  serviceTier: 'standard' | 'priority';
  defaultInferenceGeo: string;
  fastModeDowngrade: boolean;
}

/**
 * The usage of an answer (https://docs.claude.com/en/api/messages): the input as the cache left it, plus the search
 * results; `service_tier` (`standard_only` asked: `standard`), `inference_geo` as asked (else the service's), `speed`
 * when the request set it, and `server_tool_use` when it offered a server tool whose uses Anthropic counts.
 */
export function answerUsage(input: InputUsage, output: AnswerOutput, body: any, service: ServiceState): AnthropicUsage {
  const usage: AnthropicUsage = {
    ...input,
    input_tokens: input.input_tokens + output.searchInputTokens,
    output_tokens: output.outputTokens,
    service_tier: body.service_tier === 'standard_only' ? 'standard' : service.serviceTier,
    inference_geo: typeof body.inference_geo === 'string' ? body.inference_geo : service.defaultInferenceGeo,
  };
  if (body.speed !== undefined && body.speed !== null) usage.speed = body.speed === 'fast' && !service.fastModeDowngrade ? 'fast' : 'standard';
  if (offersCountedServerTool(body)) usage.server_tool_use = { web_search_requests: output.searches, web_fetch_requests: 0 };
  return usage;
}

/**
 * The events of a streamed answer, in Anthropic's order (https://docs.anthropic.com/en/docs/build-with-claude/streaming):
 * message_start's usage is the prompt's, with the tier, geography and speed; message_delta's carries the cumulative
 * counts (the search results' input tokens included) and `server_tool_use`, as the SDK's MessageDeltaUsage has them.
 */
export function messageEvents(message: Record<string, unknown>, output: AnswerOutput, usage: AnthropicUsage, reply: AnthropicReply): [string, unknown][] {
  const blocks = output.blocks;
  const events: [string, unknown][] = [];
  const { server_tool_use: serverTools, ...startUsage } = usage;
  startUsage.input_tokens -= output.searchInputTokens;
  events.push(['message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { ...startUsage, output_tokens: 1 } } }]);
  const deltaTokens = reply.deltaTokens ?? 2;
  const grouped = (text: string) => tokenGroups(text, deltaTokens);
  blocks.forEach((block: any, index) => {
    const delta = (d: Record<string, unknown>) => events.push(['content_block_delta', { type: 'content_block_delta', index, delta: d }]);
    if (block.type === 'thinking') {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } }]);
      for (const piece of grouped(block.thinking)) delta({ type: 'thinking_delta', thinking: piece });
      delta({ type: 'signature_delta', signature: block.signature });
    } else if (block.type === 'text') {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }]);
      for (const piece of grouped(block.text)) delta({ type: 'text_delta', text: piece });
    } else if (block.type === 'tool_use' || block.type === 'server_tool_use') {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } }]);
      const json = JSON.stringify(block.input);
      const pieces = Math.max(1, reply.inputJsonPieces ?? 3);
      const size = Math.ceil(json.length / pieces);
      delta({ type: 'input_json_delta', partial_json: '' });
      for (let start = 0; start < json.length; start += size) delta({ type: 'input_json_delta', partial_json: json.slice(start, start + size) });
    } else {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: block }]);
    }
    events.push(['content_block_stop', { type: 'content_block_stop', index }]);
    // Anthropic sends a ping after the first block opens (the streaming guide's example).
    if (index === 0) events.splice(2, 0, ['ping', { type: 'ping' }]);
  });
  if (blocks.length === 0) events.push(['ping', { type: 'ping' }]);
  events.push([
    'message_delta',
    {
      type: 'message_delta',
      delta: { stop_reason: output.stopReason, stop_sequence: output.stopSequence },
      usage: {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens: usage.output_tokens,
        ...(serverTools && { server_tool_use: serverTools }),
      },
    },
  ]);
  events.push(['message_stop', { type: 'message_stop' }]);
  return events;
}

/**
 * The answer's blocks, cut by the request's stop sequences and max_tokens, with its stop reason and output tokens:
 * thinking, the web searches (`calls`, each a server_tool_use and its result, the calls' tokens output), text, tool uses.
 */
export function outputFor(reply: AnthropicReply, body: any, search: FakeWebSearch | null = null, calls: SearchCall[] = []): AnswerOutput {
  let budget: number = body.max_tokens;
  let cut = false;
  const blocks: unknown[] = [];
  const take = (text: string): string => {
    const pieces = tokenPieces(text);
    const n = fakeTokenCount(text);
    if (n <= budget) {
      budget -= n;
      return text;
    }
    cut = true;
    const kept = pieces.slice(0, budget).join('');
    budget = 0;
    return kept;
  };
  if (reply.thinking) blocks.push({ type: 'thinking', thinking: take(reply.thinking.thinking), signature: reply.thinking.signature });
  if (!cut && reply.redactedThinking !== undefined) blocks.push({ type: 'redacted_thinking', data: reply.redactedThinking });
  let searched = { searches: 0, inputTokens: 0 };
  if (!cut && search && calls.length > 0) {
    const made = fitToolCalls(calls, budget);
    const found = searchBlocks(search, made.fitted);
    blocks.push(...found.blocks);
    [budget, cut, searched] = [made.left, made.cut, found];
  }
  let stopSequence: string | null = null;
  if (!cut && reply.text) {
    let text = reply.text;
    const stops: string[] = Array.isArray(body.stop_sequences) ? body.stop_sequences : [];
    let at = -1;
    for (const s of stops) {
      const i = s ? text.indexOf(s) : -1;
      if (i >= 0 && (at < 0 || i < at)) [at, stopSequence] = [i, s];
    }
    if (at >= 0) text = text.slice(0, at);
    text = take(text);
    if (text || stopSequence === null) blocks.push({ type: 'text', text });
  }
  if (!cut && stopSequence === null) {
    const tools = fitToolCalls(reply.toolUses ?? [], budget);
    for (const tool of tools.fitted) blocks.push({ type: 'tool_use', id: tool.id, name: tool.name, input: tool.input });
    [budget, cut] = [tools.left, tools.cut];
  }
  const used = body.max_tokens - budget;
  const searches = { searches: searched.searches, searchInputTokens: searched.inputTokens };
  if (cut) return { blocks, stopReason: 'max_tokens', stopSequence: null, outputTokens: body.max_tokens, ...searches };
  if (stopSequence !== null) return { blocks, stopReason: 'stop_sequence', stopSequence, outputTokens: used, ...searches };
  const stopReason = reply.stopReason ?? (reply.toolUses?.length ? 'tool_use' : 'end_turn');
  return { blocks, stopReason, stopSequence: null, outputTokens: reply.outputTokens ?? Math.max(1, used), ...searches };
}
