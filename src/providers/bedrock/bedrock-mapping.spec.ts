import { ConverseStreamOutput, ThrottlingException, ValidationException } from '@aws-sdk/client-bedrock-runtime';
import type { CatalogEntry } from '../../config/gateway-config.schema';
import { ChatChunk, PRICE_FACTS } from '../chat-contract';
import { UpstreamFailure } from '../upstream-failure';
import type { ChatRequestBody } from '../upstream-provider';
import { bedrockPriceFacts, chatUsageOf, chunksOfConverseStream, completionOfConverse } from './bedrock-to-chat';
import { bedrockFailure } from './bedrock-transport';
import { paidTier } from '../chat-request-parts';
import { converseInput } from './chat-to-bedrock';

const MODEL = { id: 'claude', max_output_tokens: 8192 } as CatalogEntry;
const CLAUDE = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
const chat = (fields: Record<string, unknown>): ChatRequestBody => ({ model: CLAUDE, messages: [{ role: 'user', content: 'Hi' }], ...fields }) as ChatRequestBody;
const CACHE_POINT = { cachePoint: { type: 'default' } };

async function chunks(events: ConverseStreamOutput[]): Promise<ChatChunk[]> {
  const out: ChatChunk[] = [];
  async function* source() {
    yield* events;
  }
  for await (const chunk of chunksOfConverseStream('test', CLAUDE, 'req-1', source())) out.push(chunk);
  return out;
}

describe('chat to Converse', () => {
  it('sends the output limit it was given, else the model\'s, and temperature, top_p and stop in inferenceConfig', () => {
    expect(converseInput(chat({ max_completion_tokens: 100, max_tokens: 50 }), MODEL).inferenceConfig).toEqual({ maxTokens: 100 });
    expect(converseInput(chat({ temperature: 1.7, top_p: 0.9, stop: 'END' }), MODEL).inferenceConfig).toEqual({ maxTokens: 8192, temperature: 1, topP: 0.9, stopSequences: ['END'] });
  });

  it('puts system and developer text in system, joins turns of one role with tool results first, and sends data: images as bytes', () => {
    const input = converseInput(
      chat({
        messages: [
          { role: 'system', content: 'Rules.' },
          { role: 'developer', content: [{ type: 'text', text: 'More rules.' }] },
          { role: 'user', content: 'a' },
          { role: 'user', content: [{ type: 'text', text: 'b' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K' } }] },
          { role: 'assistant', content: 'Let me see.', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{"x":1}' } }, { id: 't2', type: 'function', function: { name: 'g', arguments: 'not json' } }] },
          { role: 'tool', tool_call_id: 't1', content: 'one' },
          { role: 'user', content: 'and?' },
          { role: 'tool', tool_call_id: 't2', content: [{ type: 'text', text: 'two' }] },
        ],
      }),
      MODEL,
    );
    expect(input.modelId).toBe(CLAUDE);
    expect(input.system).toEqual([{ text: 'Rules.' }, { text: 'More rules.' }]);
    expect(input.messages).toEqual([
      { role: 'user', content: [{ text: 'a' }, { text: 'b' }, { image: { format: 'png', source: { bytes: Buffer.from('iVBORw0K', 'base64') } } }] },
      {
        role: 'assistant',
        content: [{ text: 'Let me see.' }, { toolUse: { toolUseId: 't1', name: 'f', input: { x: 1 } } }, { toolUse: { toolUseId: 't2', name: 'g', input: {} } }],
      },
      {
        role: 'user',
        content: [{ toolResult: { toolUseId: 't1', content: [{ text: 'one' }] } }, { toolResult: { toolUseId: 't2', content: [{ text: 'two' }] } }, { text: 'and?' }],
      },
    ]);
  });

  it('refuses what Converse cannot take before any call: n > 1, images by URL, other image formats', () => {
    expect(() => converseInput(chat({ n: 2 }), MODEL)).toThrow(UpstreamFailure);
    const image = (url: string) => chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }] });
    expect(() => converseInput(image('https://example.com/cat.png'), MODEL)).toThrow(/data: URLs/);
    expect(() => converseInput(image('data:image/bmp;base64,AAAA'), MODEL)).toThrow(/not image\/bmp/);
  });

  it('maps tools and tool_choice into toolConfig; none sends no toolConfig', () => {
    const tools = [{ type: 'function', function: { name: 'f', description: 'F', parameters: { type: 'object', properties: { a: { type: 'string' } } } } }];
    const spec = { toolSpec: { name: 'f', description: 'F', inputSchema: { json: tools[0].function.parameters } } };
    expect(converseInput(chat({ tools }), MODEL).toolConfig).toEqual({ tools: [spec] });
    expect(converseInput(chat({ tools, tool_choice: 'auto' }), MODEL).toolConfig).toEqual({ tools: [spec], toolChoice: { auto: {} } });
    expect(converseInput(chat({ tools, tool_choice: 'required' }), MODEL).toolConfig?.toolChoice).toEqual({ any: {} });
    expect(converseInput(chat({ tools, tool_choice: { type: 'function', function: { name: 'f' } } }), MODEL).toolConfig?.toolChoice).toEqual({ tool: { name: 'f' } });
    expect(converseInput(chat({ tools, tool_choice: 'none' }), MODEL).toolConfig).toBeUndefined();
  });

  it('turns reasoning_effort into Claude\'s thinking budget, leaving temperature out; other models get none', () => {
    const input = converseInput(chat({ reasoning_effort: 'medium', max_tokens: 10000, temperature: 0.3 }), MODEL);
    expect(input.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 8192 } });
    expect(input.inferenceConfig).toEqual({ maxTokens: 10000 });
    expect(converseInput(chat({ reasoning_effort: 'high', max_tokens: 1000 }), MODEL).additionalModelRequestFields).toBeUndefined();
    expect(converseInput(chat({ model: 'amazon.nova-pro-v1:0', reasoning_effort: 'high' }), MODEL).additionalModelRequestFields).toBeUndefined();
  });

  it('puts a cache point after each part the client marked with cache_control, at most four (the last ones)', () => {
    const marked = (text: string) => ({ type: 'text', text, cache_control: { type: 'ephemeral' } });
    const input = converseInput(chat({ messages: [{ role: 'system', content: [marked('S')] }, { role: 'user', content: [marked('a'), { type: 'text', text: 'b' }] }] }), MODEL);
    expect(input.system).toEqual([{ text: 'S' }, CACHE_POINT]);
    expect(input.messages![0].content).toEqual([{ text: 'a' }, CACHE_POINT, { text: 'b' }]);
    const many = converseInput(chat({ messages: [{ role: 'system', content: [marked('S')] }, { role: 'user', content: ['a', 'b', 'c', 'd'].map(marked) }] }), { ...MODEL, auto_cache: true });
    expect(many.system).toEqual([{ text: 'S' }]);
    expect(many.messages![0].content).toEqual(['a', 'b', 'c', 'd'].flatMap((text) => [{ text }, CACHE_POINT]));
  });

  it('auto_cache puts cache points after the tools, the system prompt and the last message of a request that has none', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const input = converseInput(chat({ tools, messages: [{ role: 'system', content: 'S' }, { role: 'user', content: 'Hi' }] }), { ...MODEL, auto_cache: true });
    expect(input.toolConfig!.tools).toEqual([{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } }, CACHE_POINT]);
    expect(input.system).toEqual([{ text: 'S' }, CACHE_POINT]);
    expect(input.messages).toEqual([{ role: 'user', content: [{ text: 'Hi' }, CACHE_POINT] }]);
    expect(converseInput(chat({}), MODEL).messages).toEqual([{ role: 'user', content: [{ text: 'Hi' }] }]);
  });

  it('asks for priority (also as OpenAI\'s fast) or flex in serviceTier, and sends none for the standard values', () => {
    expect(converseInput(chat({ service_tier: 'priority' }), MODEL).serviceTier).toEqual({ type: 'priority' });
    expect(converseInput(chat({ service_tier: 'fast' }), MODEL).serviceTier).toEqual({ type: 'priority' });
    expect(converseInput(chat({ service_tier: 'flex' }), MODEL).serviceTier).toEqual({ type: 'flex' });
    for (const standard of ['auto', 'default', 'standard', 'standard_only', null, 2]) expect(paidTier(standard)).toBeUndefined();
    expect(converseInput(chat({ service_tier: 'auto' }), MODEL)).not.toHaveProperty('serviceTier');
    expect(converseInput(chat({}), MODEL)).not.toHaveProperty('serviceTier');
  });
});

describe('Converse to chat', () => {
  it('reads every input class into the prompt, cache reads and writes apart', () => {
    expect(chatUsageOf({ inputTokens: 10, outputTokens: 7, totalTokens: 147, cacheReadInputTokens: 100, cacheWriteInputTokens: 30 })).toEqual({
      prompt_tokens: 140,
      completion_tokens: 7,
      total_tokens: 147,
      prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 30 },
    });
    expect(chatUsageOf({ inputTokens: -1, outputTokens: 2.5 } as never)).toMatchObject({ prompt_tokens: 0, completion_tokens: 0 });
  });

  it('answers a Converse output as a completion: text, reasoning, tool calls and the finish reason', () => {
    const completion = completionOfConverse(
      {
        output: { message: { role: 'assistant', content: [{ reasoningContent: { reasoningText: { text: 'hmm', signature: 's' } } }, { text: 'Hi' }, { toolUse: { toolUseId: 'tu1', name: 'f', input: { a: 1 } } }] } },
        stopReason: 'tool_use',
        usage: { inputTokens: 3, outputTokens: 4, totalTokens: 7 },
        metrics: { latencyMs: 1 },
      },
      CLAUDE,
      'req-9',
    );
    expect(completion.id).toBe('chatcmpl-req-9');
    expect(completion.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: { content: 'Hi', reasoning_content: 'hmm', tool_calls: [{ id: 'tu1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
    });
    expect(completion.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 4 });
    const reasons = ['end_turn', 'stop_sequence', 'max_tokens', 'guardrail_intervened', 'content_filtered'].map(
      (stopReason) => completionOfConverse({ output: { message: { role: 'assistant', content: [] } }, stopReason, usage: undefined, metrics: undefined, $metadata: {} } as never, CLAUDE, undefined).choices[0].finish_reason,
    );
    expect(reasons).toEqual(['stop', 'stop', 'length', 'content_filter', 'content_filter']);
  });

  it('streams deltas, the tool call named at its block\'s start, the finish reason at messageStop and the usage at metadata', async () => {
    const out = await chunks([
      { messageStart: { role: 'assistant' } },
      { contentBlockDelta: { contentBlockIndex: 0, delta: { reasoningContent: { text: 'think' } } } },
      { contentBlockDelta: { contentBlockIndex: 0, delta: { reasoningContent: { signature: 'sig' } } } },
      { contentBlockStop: { contentBlockIndex: 0 } },
      { contentBlockDelta: { contentBlockIndex: 1, delta: { text: 'Hel' } } },
      { contentBlockDelta: { contentBlockIndex: 1, delta: { text: 'lo' } } },
      { contentBlockStart: { contentBlockIndex: 2, start: { toolUse: { toolUseId: 'tu2', name: 'f' } } } },
      { contentBlockDelta: { contentBlockIndex: 2, delta: { toolUse: { input: '{"a":' } } } },
      { contentBlockDelta: { contentBlockIndex: 2, delta: { toolUse: { input: '1}' } } } },
      { messageStop: { stopReason: 'tool_use' } },
      { metadata: { usage: { inputTokens: 5, outputTokens: 9, totalTokens: 34, cacheReadInputTokens: 20 }, metrics: { latencyMs: 1 } } },
    ]);
    expect(out[0].choices![0].delta).toEqual({ role: 'assistant', content: '' });
    expect(out.map((c) => c.choices?.[0]?.delta?.reasoning_content ?? '').join('')).toBe('think');
    expect(out.map((c) => c.choices?.[0]?.delta?.content ?? '').join('')).toBe('Hello');
    const calls = out.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []);
    expect(calls[0]).toEqual({ index: 0, id: 'tu2', type: 'function', function: { name: 'f', arguments: '' } });
    expect(calls.map((t) => t.function?.arguments ?? '').join('')).toBe('{"a":1}');
    expect(out.at(-2)!.choices![0].finish_reason).toBe('tool_calls');
    expect(out.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 25, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 20 } } });
    expect(out.every((c) => c.id === 'chatcmpl-req-1' && c.model === CLAUDE)).toBe(true);
  });

  it('reports the tier that served the answer (serviceTier.type) as PRICE_FACTS, JSON and at the stream\'s metadata', async () => {
    const answer = (serviceTier: unknown) =>
      completionOfConverse({ output: { message: { role: 'assistant', content: [{ text: 'Hi' }] } }, stopReason: 'end_turn', usage: undefined, metrics: undefined, serviceTier, $metadata: {} } as never, CLAUDE, 'r');
    expect(answer({ type: 'priority' })[PRICE_FACTS]).toEqual({ service_tier: 'priority' });
    expect(answer({ type: 'default' })[PRICE_FACTS]).toEqual({ service_tier: 'default' });
    expect(PRICE_FACTS in answer(undefined)).toBe(false);
    expect(bedrockPriceFacts({ type: '' as never })).toBeUndefined();
    const out = await chunks([
      { messageStart: { role: 'assistant' } },
      { contentBlockDelta: { contentBlockIndex: 0, delta: { text: 'Hi' } } },
      { messageStop: { stopReason: 'end_turn' } },
      { metadata: { usage: { inputTokens: 5, outputTokens: 1, totalTokens: 6 }, metrics: { latencyMs: 1 }, serviceTier: { type: 'flex' } } },
    ]);
    expect(out.map((c) => c[PRICE_FACTS])).toEqual([undefined, undefined, undefined, { service_tier: 'flex' }]);
    const silent = await chunks([{ messageStart: { role: 'assistant' } }, { messageStop: { stopReason: 'end_turn' } }, { metadata: { usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, metrics: { latencyMs: 1 } } }]);
    expect(silent.some((c) => PRICE_FACTS in c)).toBe(false);
  });

  it('completes a stream that ends after messageStop without metadata, and fails one that ends before', async () => {
    const ended = await chunks([{ messageStart: { role: 'assistant' } }, { messageStop: { stopReason: 'end_turn' } }]);
    expect(ended.at(-1)!.choices![0].finish_reason).toBe('stop');
    await expect(chunks([{ messageStart: { role: 'assistant' } }, { contentBlockDelta: { contentBlockIndex: 0, delta: { text: 'Hi' } } }])).rejects.toMatchObject({ kind: 'bad_response' });
  });
});

describe(bedrockFailure.name, () => {
  const meta = (status: number) => ({ $metadata: { httpStatusCode: status } });

  it('makes throttling a retried 429, Bedrock\'s own failures server errors, refused credentials the operator\'s, and other 4xx pass-through rejections', () => {
    expect(bedrockFailure('b', new ThrottlingException({ message: 'Too many requests', ...meta(429) }))).toMatchObject({ kind: 'rejected', status: 429, message: 'Too many requests' });
    for (const name of ['ServiceUnavailableException', 'InternalServerException', 'ModelNotReadyException']) {
      expect(bedrockFailure('b', Object.assign(new Error('down'), { name, ...meta(503) }))).toMatchObject({ kind: 'server_error' });
    }
    expect(bedrockFailure('b', new ValidationException({ message: 'maxTokens too big', ...meta(400) }))).toMatchObject({ kind: 'rejected', status: 400, message: 'maxTokens too big' });
    for (const name of ['AccessDeniedException', 'UnrecognizedClientException']) {
      const failure = bedrockFailure('b', Object.assign(new Error('The security token included in the request is invalid.'), { name, $fault: 'client', ...meta(403) }));
      expect(failure).toMatchObject({ kind: 'credentials_refused', status: 403, provider: 'b', upstreamCode: name });
      expect(failure.message).toBe('The upstream provider "b" refused the gateway\'s credentials (HTTP 403); the operator must check the credentials configured for it.');
    }
    expect(bedrockFailure('b', Object.assign(new Error('nope'), { name: 'ResourceNotFoundException', $fault: 'client', ...meta(404) }))).toMatchObject({ kind: 'rejected', status: 404 });
  });

  it('reads failures without an answer as unreachable, timeout, broken or aborted', () => {
    expect(bedrockFailure('b', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toMatchObject({ kind: 'unreachable', beforeHeaders: true });
    expect(bedrockFailure('b', Object.assign(new Error('slow'), { name: 'TimeoutError' }))).toMatchObject({ kind: 'timeout', beforeHeaders: true });
    expect(bedrockFailure('b', Object.assign(new Error('socket hang up'), { name: 'TimeoutError', code: 'ECONNRESET' }))).toMatchObject({ kind: 'bad_response' });
    expect(bedrockFailure('b', Object.assign(new Error('Request aborted'), { name: 'AbortError' }))).toMatchObject({ kind: 'bad_response', message: 'Request to upstream b aborted.' });
  });
});
