import { Readable } from 'node:stream';
import type { CatalogEntry } from '../../config/gateway-config.schema';
import { ChatChunk, PARTIAL_USAGE, PRICE_FACTS } from '../chat-contract';
import { SseReader } from '../http/sse-reader';
import { UpstreamFailure } from '../upstream-failure';
import type { ChatRequestBody } from '../upstream-provider';
import { geminiRequest, THINKING_BUDGET } from './chat-to-gemini';
import { geminiPath } from './gemini.provider';
import { chunksOfGeminiEvents, completionOfResponse } from './gemini-to-chat';
import { chatUsageOfGemini, finishReasonOf, geminiPriceFacts } from './gemini-wire';

const MODEL = { id: 'gemini', max_output_tokens: 8192 } as CatalogEntry;
const chat = (fields: Record<string, unknown>): ChatRequestBody => ({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'Hi' }], ...fields }) as ChatRequestBody;

/** An SSE body as Gemini sends it: `data:` events, CRLF CRLF, and no end marker. */
function sse(events: object[]): SseReader {
  const text = events.map((data) => `data: ${JSON.stringify(data)}\r\n\r\n`).join('');
  return new SseReader('test', Readable.from([Buffer.from(text, 'utf8')]));
}

async function chunks(events: object[], facts?: { service_tier: string }): Promise<ChatChunk[]> {
  const out: ChatChunk[] = [];
  for await (const chunk of chunksOfGeminiEvents('test', sse(events), facts)) out.push(chunk);
  return out;
}

describe('chat to Gemini', () => {
  it('names the endpoints under base_url, the model in the path', () => {
    expect(geminiPath('chat', 'gemini-2.5-flash')).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(geminiPath('chat_stream', 'models/gemini-2.5-pro')).toBe('/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse');
  });

  it('sends the output limit it was given, else the model\'s', () => {
    expect(geminiRequest(chat({ max_completion_tokens: 100, max_tokens: 50 }), MODEL).generationConfig.maxOutputTokens).toBe(100);
    expect(geminiRequest(chat({ max_tokens: 50 }), MODEL).generationConfig.maxOutputTokens).toBe(50);
    expect(geminiRequest(chat({}), MODEL).generationConfig.maxOutputTokens).toBe(8192);
  });

  it('puts system and developer messages in systemInstruction and joins consecutive turns of one role', () => {
    const request = geminiRequest(
      chat({
        messages: [
          { role: 'system', content: 'Rules.' },
          { role: 'developer', content: [{ type: 'text', text: 'More rules.' }] },
          { role: 'user', content: 'a' },
          { role: 'user', content: [{ type: 'text', text: 'b' }, { type: 'image_url', image_url: { url: 'https://example.com/cat.JPG?x=1' } }, { type: 'image_url', image_url: 'https://example.com/blob' }] },
          { role: 'assistant', content: 'c' },
          { role: 'assistant', content: '', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: 'not json' } }] },
          { role: 'tool', tool_call_id: 't1', content: '{"ok":true}' },
          { role: 'tool', tool_call_id: 'unknown', name: 'g', content: [{ type: 'text', text: '42' }] },
        ],
      }),
      MODEL,
    );
    expect(request.systemInstruction).toEqual({ parts: [{ text: 'Rules.' }, { text: 'More rules.' }] });
    expect(request.contents).toEqual([
      { role: 'user', parts: [{ text: 'a' }, { text: 'b' }, { fileData: { fileUri: 'https://example.com/cat.JPG?x=1', mimeType: 'image/jpeg' } }, { fileData: { fileUri: 'https://example.com/blob' } }] },
      { role: 'model', parts: [{ text: 'c' }, { functionCall: { name: 'f', args: {} } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'f', response: { ok: true } } }, { functionResponse: { name: 'g', response: { result: '42' } } }] },
    ]);
  });

  it('declares function tools with their full JSON Schema and maps every tool_choice', () => {
    const parameters = { type: 'object', properties: { a: { type: ['string', 'null'] } }, additionalProperties: false };
    const tools = [{ type: 'function', function: { name: 'f', description: 'F', parameters } }, { type: 'function', function: { name: 'g' } }, { type: 'custom', custom: { name: 'x' } }];
    const request = geminiRequest(chat({ tools }), MODEL);
    expect(request.tools).toEqual([{ functionDeclarations: [{ name: 'f', description: 'F', parametersJsonSchema: parameters }, { name: 'g' }] }]);
    expect(request.toolConfig).toBeUndefined();
    const mode = (choice: unknown) => geminiRequest(chat({ tools, tool_choice: choice }), MODEL).toolConfig?.functionCallingConfig;
    expect(mode('auto')).toEqual({ mode: 'AUTO' });
    expect(mode('required')).toEqual({ mode: 'ANY' });
    expect(mode('none')).toEqual({ mode: 'NONE' });
    expect(mode({ type: 'function', function: { name: 'g' } })).toEqual({ mode: 'ANY', allowedFunctionNames: ['g'] });
  });

  it('maps sampling, stop, n, JSON output and reasoning_effort into generationConfig', () => {
    const config = geminiRequest(chat({ temperature: 1.5, top_p: 0.9, stop: 'END', n: 2, seed: 7, response_format: { type: 'json_schema', json_schema: { name: 's', schema: { type: 'object' } } } }), MODEL).generationConfig;
    expect(config).toEqual({ maxOutputTokens: 8192, temperature: 1.5, topP: 0.9, stopSequences: ['END'], candidateCount: 2, seed: 7, responseMimeType: 'application/json', responseJsonSchema: { type: 'object' } });
    expect(geminiRequest(chat({ reasoning_effort: 'high' }), MODEL).generationConfig.thinkingConfig).toEqual({ thinkingBudget: THINKING_BUDGET.high, includeThoughts: true });
    expect(geminiRequest(chat({ reasoning_effort: 'none' }), MODEL).generationConfig.thinkingConfig).toEqual({ thinkingBudget: 0 });
    expect(geminiRequest(chat({}), MODEL).generationConfig.thinkingConfig).toBeUndefined();
    expect(Object.values(THINKING_BUDGET).every((b) => b > 0 && b <= 24576)).toBe(true);
  });

  it('asks for priority (also as OpenAI\'s fast) or flex in serviceTier, and sends none for the standard values', () => {
    const tier = (service_tier: unknown) => geminiRequest(chat({ service_tier }), MODEL).serviceTier;
    expect(tier('priority')).toBe('priority');
    expect(tier('fast')).toBe('priority');
    expect(tier('flex')).toBe('flex');
    for (const standard of ['auto', 'default', 'standard', 'standard_only', null, 1]) expect(tier(standard)).toBeUndefined();
    expect(geminiRequest(chat({ service_tier: 'default' }), MODEL)).not.toHaveProperty('serviceTier');
  });
});

describe('Gemini to chat', () => {
  it('maps usage into chat\'s classes: tool-use prompt into the prompt, thoughts into the completion and reasoning', () => {
    expect(chatUsageOfGemini({ promptTokenCount: 100, toolUsePromptTokenCount: 20, cachedContentTokenCount: 60, candidatesTokenCount: 30, thoughtsTokenCount: 12 })).toEqual({
      prompt_tokens: 120,
      completion_tokens: 42,
      total_tokens: 162,
      prompt_tokens_details: { cached_tokens: 60 },
      completion_tokens_details: { reasoning_tokens: 12 },
    });
    expect(chatUsageOfGemini({ promptTokenCount: -3, candidatesTokenCount: 1.5 })).toMatchObject({ prompt_tokens: 0, completion_tokens: 0 });
  });

  it('maps finish reasons', () => {
    expect(finishReasonOf('STOP', false)).toBe('stop');
    expect(finishReasonOf('STOP', true)).toBe('tool_calls');
    expect(finishReasonOf('MAX_TOKENS', true)).toBe('length');
    for (const reason of ['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY']) expect(finishReasonOf(reason, false)).toBe('content_filter');
    expect(finishReasonOf('OTHER', false)).toBe('stop');
  });

  it('reads an answer: text, thoughts, function calls with ids (Gemini\'s when given), one choice per candidate', () => {
    const completion = completionOfResponse({
      responseId: 'r1',
      modelVersion: 'gemini-2.5-flash',
      candidates: [
        { index: 0, finishReason: 'STOP', content: { role: 'model', parts: [{ text: 'Think.', thought: true }, { text: 'Hi ' }, { text: 'there' }, { functionCall: { name: 'f', args: { a: 1 } } }, { functionCall: { id: 'g-1', name: 'g' } }] } },
        { index: 1, finishReason: 'MAX_TOKENS', content: { role: 'model', parts: [{ text: 'Cut' }] } },
      ],
      usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 7 },
    });
    expect(completion.id).toBe('chatcmpl-r1');
    expect(completion.choices[0]).toMatchObject({ index: 0, finish_reason: 'tool_calls', message: { content: 'Hi there', reasoning_content: 'Think.' } });
    expect(completion.choices[0].message!.tool_calls).toEqual([
      { id: expect.stringMatching(/^call_[0-9a-f]{24}$/), type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
      { id: 'g-1', type: 'function', function: { name: 'g', arguments: '{}' } },
    ]);
    expect(completion.choices[1]).toMatchObject({ index: 1, finish_reason: 'length', message: { content: 'Cut' } });
  });

  it('answers a blocked prompt (no candidates) as empty content finished content_filter', () => {
    const completion = completionOfResponse({ promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 4 } });
    expect(completion.choices).toEqual([{ index: 0, message: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: 'content_filter' }]);
    expect(completion.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 0 });
  });

  it('streams deltas and ends with the body: the finish, then the last usageMetadata once', async () => {
    const out = await chunks([
      { responseId: 'r', candidates: [{ content: { parts: [{ text: 'Hmm', thought: true }] } }], usageMetadata: { promptTokenCount: 9, cachedContentTokenCount: 4 } },
      { candidates: [{ content: { parts: [{ text: 'Hel' }] } }], usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 1 } },
      { candidates: [{ content: { parts: [{ text: 'lo' }, { functionCall: { name: 'f', args: { x: 1 } } }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 9, cachedContentTokenCount: 4, candidatesTokenCount: 3, thoughtsTokenCount: 2 } },
    ]);
    const deltas = out.flatMap((c) => c.choices ?? []).map((c) => c.delta);
    expect(deltas[0]).toEqual({ role: 'assistant', content: '', reasoning_content: 'Hmm' });
    expect(deltas.map((d) => d?.content ?? '').join('')).toBe('Hello');
    expect(deltas.flatMap((d) => d?.tool_calls ?? [])).toEqual([{ index: 0, id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'f', arguments: '{"x":1}' } }]);
    expect(out.flatMap((c) => c.choices ?? []).map((c) => c.finish_reason).filter(Boolean)).toEqual(['tool_calls']);
    expect(out.filter((c) => c.usage)).toHaveLength(1);
    expect(out.at(-1)).toMatchObject({ id: 'chatcmpl-r', choices: [], usage: { prompt_tokens: 9, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 4 } } });
    expect(out[0][PARTIAL_USAGE]).toMatchObject({ prompt_tokens: 9, prompt_tokens_details: { cached_tokens: 4 } });
  });

  it('fails a stream whose body ends before a finishReason, or that carries an error event', async () => {
    await expect(chunks([{ candidates: [{ content: { parts: [{ text: 'Hel' }] } }] }])).rejects.toThrow(UpstreamFailure);
    await expect(chunks([])).rejects.toThrow(/ended the stream before its answer finished/);
    const error = await chunks([{ candidates: [{ content: { parts: [{ text: 'Hel' }] } }] }, { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } }]).catch((e) => e);
    expect(error).toMatchObject({ kind: 'server_error', status: 503, message: expect.stringContaining('The model is overloaded.') });
    await expect(chunks([{ candidates: 'nonsense' }, ['not an object']])).rejects.toThrow(/malformed stream event/);
  });

  it('reads the tier that served the answer from x-gemini-service-tier, in lower case', () => {
    expect(geminiPriceFacts({ 'x-gemini-service-tier': 'priority' })).toEqual({ service_tier: 'priority' });
    expect(geminiPriceFacts({ 'x-gemini-service-tier': ' STANDARD ' })).toEqual({ service_tier: 'standard' });
    expect(geminiPriceFacts({ 'x-gemini-service-tier': ['flex', 'priority'] })).toEqual({ service_tier: 'flex' });
    expect(geminiPriceFacts({ 'x-gemini-service-tier': '' })).toBeUndefined();
    expect(geminiPriceFacts({ 'content-type': 'text/event-stream' })).toBeUndefined();
  });

  it('puts the answer\'s tier on every chunk of its stream, the usage chunk included', async () => {
    const events = [
      { responseId: 'r', candidates: [{ content: { parts: [{ text: 'Hel' }] } }], usageMetadata: { promptTokenCount: 2 } },
      { candidates: [{ content: { parts: [{ text: 'lo' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 2, candidatesTokenCount: 2 } },
    ];
    const out = await chunks(events, { service_tier: 'standard' });
    expect(out.length).toBeGreaterThan(2);
    expect(out.map((c) => c[PRICE_FACTS])).toEqual(out.map(() => ({ service_tier: 'standard' })));
    expect(out.at(-1)!.usage).toMatchObject({ prompt_tokens: 2 });
    expect((await chunks(events)).some((c) => PRICE_FACTS in c)).toBe(false);
  });

  it('ends a blocked prompt\'s stream as content_filter', async () => {
    const out = await chunks([{ promptFeedback: { blockReason: 'OTHER' }, usageMetadata: { promptTokenCount: 3 } }]);
    expect(out[0].choices).toEqual([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: 'content_filter' }]);
    expect(out.at(-1)!.usage).toMatchObject({ prompt_tokens: 3 });
  });
});
