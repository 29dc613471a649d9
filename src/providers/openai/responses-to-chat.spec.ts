import { Readable } from 'node:stream';
import { ChatChunk, NATIVE_ANSWER, NATIVE_EVENT, PARTIAL_USAGE, PRICE_FACTS } from '../chat-contract';
import { SseReader } from '../http/sse-reader';
import { UpstreamFailure } from '../upstream-failure';
import type { ResponsesResponse } from './responses-events';
import { chatUsageOfResponse, chunksOfResponseEvents, completionOfResponse } from './responses-to-chat';

const USAGE = { input_tokens: 120, input_tokens_details: { cached_tokens: 100 }, output_tokens: 40, output_tokens_details: { reasoning_tokens: 25 }, total_tokens: 160 };

function response(output: unknown[], extra: Partial<ResponsesResponse> = {}): ResponsesResponse {
  return { id: 'resp_1', object: 'response', created_at: 1700000000, status: 'completed', error: null, incomplete_details: null, model: 'gpt-6.2-sol', output, instructions: null, service_tier: 'default', usage: USAGE, ...extra } as ResponsesResponse;
}

async function chunksOf(events: Record<string, unknown>[], end = true, native = true): Promise<ChatChunk[]> {
  const text = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
  const chunks: ChatChunk[] = [];
  for await (const chunk of chunksOfResponseEvents('openai', new SseReader('openai', Readable.from([text])), native)) chunks.push(chunk);
  if (!end) throw new Error('the stream was expected to fail');
  return chunks;
}

describe('responses-to-chat', () => {
  it('reads usage into chat classes: input (of which cached), output (of which reasoning)', () => {
    expect(chatUsageOfResponse(USAGE)).toEqual({
      prompt_tokens: 120,
      completion_tokens: 40,
      total_tokens: 160,
      prompt_tokens_details: { cached_tokens: 100 },
      completion_tokens_details: { reasoning_tokens: 25 },
    });
    expect(chatUsageOfResponse(null)).toBeUndefined();
  });

  it('reads a Response into a chat.completion: text, reasoning summary, function and custom calls, tier, searches; the Response kept', () => {
    const answer = response([
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Plan.' }], encrypted_content: 'gAAAA' },
      { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'x' } },
      { type: 'web_search_call', id: 'ws_2', status: 'completed', action: { type: 'open_page', url: 'https://e.org' } },
      { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello ', annotations: [] }, { type: 'output_text', text: 'there.', annotations: [] }] },
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' },
      { type: 'custom_tool_call', id: 'ctc_1', call_id: 'call_2', name: 'exec', input: 'ls -la' },
    ], { service_tier: 'priority' });
    const completion = completionOfResponse(answer, true);
    expect(completion).toMatchObject({ id: 'chatcmpl-resp_1', object: 'chat.completion', created: 1700000000, model: 'gpt-6.2-sol', service_tier: 'priority' });
    expect(completion.choices[0]).toEqual({
      index: 0,
      logprobs: null,
      finish_reason: 'tool_calls',
      message: {
        role: 'assistant',
        content: 'Hello there.',
        refusal: null,
        reasoning_content: 'Plan.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_2', type: 'custom', custom: { name: 'exec', input: 'ls -la' } },
        ],
      },
    });
    expect(completion.usage).toMatchObject({ prompt_tokens: 120, prompt_tokens_details: { cached_tokens: 100 } });
    expect(completion[NATIVE_ANSWER]).toBe(answer);
    // Translated for a chat or Messages client, the Response is not kept: its route would relay it as its own answer.
    expect(completionOfResponse(answer, false)[NATIVE_ANSWER]).toBeUndefined();
    expect(completion[PRICE_FACTS]).toEqual({ tool_uses: { web_search: 2 } });
  });

  it('reads an incomplete Response as `length` (content_filter as itself), a refusal as refusal, and no usage as none', () => {
    const cut = completionOfResponse(response([{ type: 'message', id: 'm', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', text: 'Half' }] }], { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage: null }), true);
    expect(cut.choices[0].finish_reason).toBe('length');
    expect(cut.usage).toBeUndefined();
    expect(cut[PRICE_FACTS]).toBeUndefined();
    const filtered = completionOfResponse(response([], { status: 'incomplete', incomplete_details: { reason: 'content_filter' } }), true);
    expect(filtered.choices[0].finish_reason).toBe('content_filter');
    const refused = completionOfResponse(response([{ type: 'message', id: 'm', role: 'assistant', status: 'completed', content: [{ type: 'refusal', refusal: 'No.' }] }]), true);
    expect(refused.choices[0].message).toMatchObject({ content: null, refusal: 'No.' });
  });

  it('reads a stream into chunks, each keeping its event; calls named then filled; usage, tier and searches at the end', async () => {
    const events = [
      { type: 'response.created', sequence_number: 0, response: { ...response([]), status: 'in_progress', usage: null, service_tier: 'auto' } },
      { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { type: 'web_search_call', id: 'ws_1', status: 'in_progress' } },
      { type: 'response.output_item.done', sequence_number: 2, output_index: 0, item: { type: 'web_search_call', id: 'ws_1', status: 'completed' } },
      { type: 'response.output_text.delta', sequence_number: 3, item_id: 'msg_1', output_index: 1, content_index: 0, delta: 'Hi' },
      { type: 'response.reasoning_summary_text.delta', sequence_number: 4, item_id: 'rs_1', output_index: 2, summary_index: 0, delta: 'Think' },
      { type: 'response.output_item.added', sequence_number: 5, output_index: 3, item: { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'f', arguments: '', status: 'in_progress' } },
      { type: 'response.function_call_arguments.delta', sequence_number: 6, item_id: 'fc_1', output_index: 3, delta: '{"a":' },
      { type: 'response.output_item.added', sequence_number: 7, output_index: 4, item: { type: 'custom_tool_call', id: 'ctc_1', call_id: 'call_2', name: 'exec', input: '' } },
      { type: 'response.custom_tool_call_input.delta', sequence_number: 8, item_id: 'ctc_1', output_index: 4, delta: 'ls' },
      { type: 'response.completed', sequence_number: 9, response: response([{ type: 'web_search_call', id: 'ws_1', status: 'completed' }], { service_tier: 'flex' }) },
    ];
    const chunks = await chunksOf(events);
    expect(chunks).toHaveLength(events.length);
    expect(chunks.map((c) => c[NATIVE_EVENT]!.event)).toEqual(events.map((e) => e.type));
    expect(chunks.map((c) => c[NATIVE_EVENT]!.raw)).toEqual(events.map((e) => JSON.stringify(e)));
    expect(chunks[0]).toMatchObject({ id: 'chatcmpl-resp_1', model: 'gpt-6.2-sol', choices: [{ delta: { role: 'assistant', content: '' } }] });
    expect(chunks[1].choices).toEqual([]);
    expect(chunks[2][PRICE_FACTS]).toEqual({ tool_uses: { web_search: 1 } });
    expect(chunks[3].choices![0].delta).toEqual({ content: 'Hi' });
    expect(chunks[4].choices![0].delta).toEqual({ reasoning_content: 'Think' });
    expect(chunks[5].choices![0].delta).toEqual({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] });
    expect(chunks[6].choices![0].delta).toEqual({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] });
    expect(chunks[7].choices![0].delta).toEqual({ tool_calls: [{ index: 1, id: 'call_2', type: 'custom', custom: { name: 'exec', input: '' } }] });
    expect(chunks[8].choices![0].delta).toEqual({ tool_calls: [{ index: 1, custom: { input: 'ls' } }] });
    const last = chunks[9];
    expect(last.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }]);
    expect(last.usage).toEqual(chatUsageOfResponse(USAGE));
    expect(last[PARTIAL_USAGE]).toEqual(last.usage);
    expect(last.service_tier).toBe('flex');
    expect(last[PRICE_FACTS]).toEqual({ tool_uses: { web_search: 1 } });

    // Translated for a chat or Messages client: no native event (its route would relay it), no chunk that adds nothing.
    const translated = await chunksOf(events, true, false);
    expect(translated.some((c) => c[NATIVE_EVENT] !== undefined)).toBe(false);
    expect(translated.map((c) => c.choices?.[0]?.delta ?? c[PRICE_FACTS])).toEqual([
      { role: 'assistant', content: '' },
      { tool_uses: { web_search: 1 } },
      { content: 'Hi' },
      { reasoning_content: 'Think' },
      chunks[5].choices![0].delta,
      chunks[6].choices![0].delta,
      chunks[7].choices![0].delta,
      chunks[8].choices![0].delta,
      {},
    ]);
  });

  it('ends at response.incomplete as `length`; fails on an error event, response.failed, or a stream cut before its end', async () => {
    const created = { type: 'response.created', sequence_number: 0, response: { ...response([]), status: 'in_progress', usage: null } };
    const incomplete = await chunksOf([created, { type: 'response.incomplete', sequence_number: 1, response: response([], { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } }) }]);
    expect(incomplete[1].choices![0].finish_reason).toBe('length');
    await expect(chunksOf([created, { type: 'error', sequence_number: 1, code: 'server_error', message: 'boom', param: null }], false)).rejects.toThrow(/failed mid-stream: boom/);
    await expect(chunksOf([created, { type: 'response.failed', sequence_number: 1, response: response([], { status: 'failed', error: { code: 'server_error', message: 'gone' } }) }], false)).rejects.toThrow(/gone/);
    await expect(chunksOf([created], false)).rejects.toBeInstanceOf(UpstreamFailure);
  });
});
