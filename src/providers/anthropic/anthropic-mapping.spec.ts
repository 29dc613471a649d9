import { Readable } from 'node:stream';
import type { CatalogEntry } from '../../config/gateway-config.schema';
import { ChatChunk, NATIVE_EVENT, PARTIAL_USAGE, PRICE_FACTS } from '../chat-contract';
import { SseReader } from '../http/sse-reader';
import { UpstreamFailure } from '../upstream-failure';
import type { ChatRequestBody } from '../upstream-provider';
import { chunksOfMessageEvents, completionOfMessage } from './anthropic-to-chat';
import { chatUsageOfMessage, mergedUsage, priceFactsOfUsage } from './anthropic-wire';
import { anthropicRequest, withCacheBreakpoints } from './chat-to-anthropic';

const MODEL = { id: 'claude', max_output_tokens: 8192 } as CatalogEntry;
const chat = (fields: Record<string, unknown>): ChatRequestBody => ({ model: 'claude-x', messages: [{ role: 'user', content: 'Hi' }], ...fields }) as ChatRequestBody;

function sse(events: [string, object][]): SseReader {
  const text = events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join('');
  return new SseReader('test', Readable.from([Buffer.from(text, 'utf8')]));
}

async function chunks(events: [string, object][]): Promise<ChatChunk[]> {
  const out: ChatChunk[] = [];
  for await (const chunk of chunksOfMessageEvents('test', sse(events))) out.push(chunk);
  return out;
}

describe('chat to Anthropic', () => {
  it('sends the output limit it was given, else the model\'s (Anthropic requires one)', () => {
    expect(anthropicRequest(chat({ max_completion_tokens: 100, max_tokens: 50 }), MODEL).max_tokens).toBe(100);
    expect(anthropicRequest(chat({ max_tokens: 50 }), MODEL).max_tokens).toBe(50);
    expect(anthropicRequest(chat({}), MODEL).max_tokens).toBe(8192);
  });

  it('joins consecutive messages of one role into one turn, tool results first', () => {
    const request = anthropicRequest(
      chat({
        messages: [
          { role: 'developer', content: 'Rules.' },
          { role: 'user', content: 'a' },
          { role: 'user', content: [{ type: 'text', text: 'b' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
          { role: 'assistant', content: '', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: 'not json' } }] },
          { role: 'tool', tool_call_id: 't1', content: [{ type: 'text', text: 'done' }] },
        ],
      }),
      MODEL,
    );
    expect(request.system).toEqual([{ type: 'text', text: 'Rules.' }]);
    expect(request.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'done' }] },
    ]);
  });

  it('maps tool_choice and parallel_tool_calls; none sends no tools', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    expect(anthropicRequest(chat({ tools, tool_choice: { type: 'function', function: { name: 'f' } }, parallel_tool_calls: false }), MODEL).tool_choice).toEqual({
      type: 'tool',
      name: 'f',
      disable_parallel_tool_use: true,
    });
    const none = anthropicRequest(chat({ tools, tool_choice: 'none' }), MODEL);
    expect(none.tools).toBeUndefined();
    expect(none.tool_choice).toBeUndefined();
  });

  it('turns reasoning_effort into a thinking budget below max_tokens, and then leaves temperature out', () => {
    expect(anthropicRequest(chat({ reasoning_effort: 'high', max_tokens: 4000, temperature: 0.5 }), MODEL)).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 3999 } });
    expect(anthropicRequest(chat({ reasoning_effort: 'high', max_tokens: 4000, temperature: 0.5 }), MODEL).temperature).toBeUndefined();
    expect(anthropicRequest(chat({ reasoning_effort: 'low', max_tokens: 1000 }), MODEL).thinking).toBeUndefined();
    expect(anthropicRequest(chat({ reasoning_effort: 'minimal' }), MODEL).thinking).toBeUndefined();
    expect(anthropicRequest(chat({ temperature: 1.7 }), MODEL).temperature).toBe(1);
  });

  it('refuses n > 1 before any call: Anthropic answers once per request', () => {
    expect(() => anthropicRequest(chat({ n: 2 }), MODEL)).toThrow(UpstreamFailure);
  });

  it('auto_cache marks the last tool, system block and message block, without changing the request it was given', () => {
    const request = { model: 'm', max_tokens: 1, system: 'S', tools: [{ name: 'a' }, { name: 'b' }], messages: [{ role: 'user', content: 'Hi' }] };
    const before = JSON.stringify(request);
    const marked = withCacheBreakpoints(request);
    expect(JSON.stringify(request)).toBe(before);
    expect(marked).toEqual({
      model: 'm',
      max_tokens: 1,
      system: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral' } }],
      tools: [{ name: 'a' }, { name: 'b', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] }],
    });
    const own = { ...request, messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral' } }] }] };
    expect(withCacheBreakpoints(own)).toBe(own);
  });
});

describe('Anthropic to chat', () => {
  it('reads every cache class into chat usage, the 1-hour writes apart', () => {
    const usage = { input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 30, cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 20 }, output_tokens: 7 };
    expect(chatUsageOfMessage(usage)).toEqual({
      prompt_tokens: 140,
      completion_tokens: 7,
      total_tokens: 147,
      prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 30, cache_write_1h_tokens: 20 },
    });
    expect(mergedUsage(usage, { output_tokens: 50 })).toMatchObject({ input_tokens: 10, output_tokens: 50 });
  });

  it('answers a message as a completion: text, reasoning, tool calls, finish reason; the message kept for pass-through', () => {
    const message = {
      id: 'msg_1',
      type: 'message' as const,
      model: 'claude-x',
      content: [
        { type: 'thinking', thinking: 'hmm', signature: 's' },
        { type: 'text', text: 'Hi' },
        { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } },
      ],
      stop_reason: 'tool_use' as const,
      usage: { input_tokens: 3, output_tokens: 4 },
    };
    const completion = completionOfMessage(message);
    expect(completion.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: { content: 'Hi', reasoning_content: 'hmm', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
    });
    expect(completion.id).toBe('chatcmpl-msg_1');
    expect(JSON.stringify(completion)).not.toContain('signature');
  });

  it('streams deltas, a partial usage at message_start and the final one at message_delta; every event kept', async () => {
    const start = { type: 'message_start', message: { id: 'msg_2', model: 'claude-x', usage: { input_tokens: 5, cache_read_input_tokens: 20, output_tokens: 1 } } };
    const out = await chunks([
      ['message_start', start],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['ping', { type: 'ping' }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_2', name: 'f', input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '1}' } }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } }],
      ['message_stop', { type: 'message_stop' }],
    ]);
    expect(out).toHaveLength(11);
    expect(out.every((c) => c[NATIVE_EVENT] !== undefined)).toBe(true);
    expect(out[0][PARTIAL_USAGE]).toMatchObject({ prompt_tokens: 25, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 20 } });
    expect(out[0][NATIVE_EVENT]!.raw).toBe(JSON.stringify(start));
    const text = out.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
    expect(text).toBe('Hello');
    const args = out.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []).map((t) => t.function?.arguments ?? '').join('');
    expect(args).toBe('{"a":1}');
    expect(out[9]).toMatchObject({ choices: [{ finish_reason: 'tool_calls' }], usage: { prompt_tokens: 25, completion_tokens: 9 } });
  });

  it("reads what the usage says of the price: tier, speed, geography, server tools' uses by family", () => {
    expect(priceFactsOfUsage({ input_tokens: 1, output_tokens: 2 })).toBeUndefined();
    expect(priceFactsOfUsage(undefined)).toBeUndefined();
    expect(
      priceFactsOfUsage({
        input_tokens: 1,
        output_tokens: 2,
        service_tier: 'priority',
        speed: 'fast',
        inference_geo: 'us',
        server_tool_use: { web_search_requests: 3, web_fetch_requests: 0, code_execution_requests: 1.5, bogus: 2 },
      }),
    ).toEqual({ service_tier: 'priority', speed: 'fast', inference_geo: 'us', tool_uses: { web_search: 3, web_fetch: 0 } });
    // A downgraded fast request is reported as it ran; "not_available" is no geography at all.
    expect(priceFactsOfUsage({ service_tier: 'standard', speed: 'standard', inference_geo: 'not_available' })).toEqual({ service_tier: 'standard', speed: 'standard' });
    expect(priceFactsOfUsage({ inference_geo: 'not_available', server_tool_use: null as unknown as Record<string, unknown> })).toBeUndefined();
  });

  it('puts the price facts on a JSON answer, translated or passed through', () => {
    const usage = { input_tokens: 3, output_tokens: 4, service_tier: 'standard', speed: 'fast', inference_geo: 'us', server_tool_use: { web_search_requests: 2, web_fetch_requests: 0 } };
    const completion = completionOfMessage({ id: 'msg_3', type: 'message', model: 'claude-x', content: [{ type: 'text', text: 'Hi' }], stop_reason: 'end_turn', usage });
    expect(completion[PRICE_FACTS]).toEqual({ service_tier: 'standard', speed: 'fast', inference_geo: 'us', tool_uses: { web_search: 2, web_fetch: 0 } });
    expect(completion.usage).toEqual(chatUsageOfMessage(usage));
    expect(completionOfMessage({ type: 'message', content: [], usage: { input_tokens: 1, output_tokens: 1 } })[PRICE_FACTS]).toBeUndefined();
  });

  it("streams the price facts where the usage is: message_start's tier, speed and geography, message_delta's whole usage with the searches", async () => {
    const search = { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} };
    const out = await chunks([
      ['message_start', { type: 'message_start', message: { id: 'msg_4', model: 'claude-x', usage: { input_tokens: 5, output_tokens: 1, service_tier: 'priority', speed: 'fast', inference_geo: 'us' } } }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: search }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"query":"q"}' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] } }],
      ['content_block_stop', { type: 'content_block_stop', index: 1 }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 900, output_tokens: 9, server_tool_use: { web_search_requests: 1, web_fetch_requests: 0 } } }],
      ['message_stop', { type: 'message_stop' }],
    ]);
    expect(out[0][PRICE_FACTS]).toEqual({ service_tier: 'priority', speed: 'fast', inference_geo: 'us' });
    expect(out.slice(1, 6).every((c) => c[PRICE_FACTS] === undefined)).toBe(true);
    // A server tool's call is no chat tool call: nothing for a chat client, relayed to a Messages client.
    expect(out.slice(1, 6).every((c) => c.choices?.length === 0)).toBe(true);
    expect(out[6][PRICE_FACTS]).toEqual({ service_tier: 'priority', speed: 'fast', inference_geo: 'us', tool_uses: { web_search: 1, web_fetch: 0 } });
    expect(out[6].usage).toMatchObject({ prompt_tokens: 900, completion_tokens: 9 });
    expect(out[7][PRICE_FACTS]).toBeUndefined();
  });

  it('fails on an error event, and on a stream that ends before message_stop', async () => {
    await expect(chunks([['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]])).rejects.toMatchObject({ kind: 'server_error' });
    await expect(chunks([['message_start', { type: 'message_start', message: {} }]])).rejects.toMatchObject({ kind: 'bad_response' });
  });
});
