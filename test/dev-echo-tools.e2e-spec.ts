import Anthropic from '@anthropic-ai/sdk';
import { countTokens } from 'gpt-tokenizer';
import OpenAI from 'openai';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { expectOneCharge, costMicros, moneyOf, postChat, readSseData, sdk, useGateway } from './support/chat-support';
import { anthropic } from './support/messages-support';
import { expectValidAgainst } from './support/openapi';
import { TestApp } from './support/test-app';

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type ChatTool = OpenAI.Chat.Completions.ChatCompletionFunctionTool;

// config/gateway.yaml: dev-echo at $0.50 / $1.50 per million tokens.
const DEV_ECHO = { input: 0.5, output: 1.5 };
const CREDITS = 1_000_000n;
const CALL_ID = /^call_[0-9a-f]{24}$/;

const WEATHER_SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
  required: ['city'],
};
const WEATHER: ChatTool = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: WEATHER_SCHEMA } };
const TIME: ChatTool = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } };
// Required nested object, enum, array, integer, boolean and const; optional properties left out.
const SEARCH: ChatTool = {
  type: 'function',
  function: {
    name: 'search_files',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string' },
        limit: { type: 'number' },
        options: {
          type: 'object',
          properties: {
            mode: { type: 'string', enum: ['fast', 'thorough'] },
            paths: { type: 'array', items: { type: 'string' } },
            depth: { type: 'integer' },
            follow_links: { type: 'boolean' },
            format: { const: 'v2' },
            filters: { type: 'object', properties: { ext: { type: 'string' }, size: { type: 'integer' } }, required: ['ext'] },
            hidden: { type: 'boolean' },
          },
          required: ['mode', 'paths', 'depth', 'follow_links', 'format', 'filters'],
        },
      },
      required: ['query', 'options'],
    },
  },
};
const SEARCH_LEAST_ARGUMENTS = '{"query":"","options":{"mode":"fast","paths":[],"depth":0,"follow_links":false,"format":"v2","filters":{"ext":""}}}';

const WEATHER_LINE = 'call get_weather {"city": "Paris", "unit": "celsius"}';
const WEATHER_ARGUMENTS = '{"city":"Paris","unit":"celsius"}';
const TIME_LINE = 'call get_time {"zone": "Europe/Paris"}';
const TIME_ARGUMENTS = '{"zone":"Europe/Paris"}';
const TWO_CALLS = `Check two things.\n${WEATHER_LINE}\r\n  ${TIME_LINE}\nThanks!`;

/** The completion tokens of tool calls as the gateway bills them: each call's name then its arguments, one text (docs/billing.md). */
const callTokens = (...calls: [string, string][]) => countTokens(calls.map(([name, args]) => name + args).join(''));

/**
 * The prompt count (docs/billing.md, "The gateway's own token count"): 3 for the reply, 3 per message and
 * each of its fields (strings as they are, the rest as JSON text), the tool definitions as their JSON text.
 */
function promptTokens(messages: ChatMessage[], tools?: ChatTool[]): number {
  let total = 3 + (tools ? countTokens(JSON.stringify(tools)) : 0);
  for (const message of messages) {
    total += 3;
    for (const value of Object.values(message)) {
      if (value !== null && value !== undefined) total += countTokens(typeof value === 'string' ? value : JSON.stringify(value));
    }
  }
  return total;
}

describe('dev-echo drives tool loops offline, and answers n choices (DESIGN.md section 11)', () => {
  let gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useGateway();
  beforeAll(() => ({ gw, admin, db } = suite));

  async function account(): Promise<{ accountId: string; key: string }> {
    return admin.createAccount({ creditsUsd: '1' });
  }

  /** The account's one charge is the catalog price of these tokens, and its usage record holds them. */
  const expectCharged = (accountId: string, prompt: number, completion: number, endpoint = '/v1/chat/completions') =>
    expectOneCharge(db, accountId, { cost: costMicros(DEV_ECHO, prompt, completion), credits: CREDITS, row: { endpoint, model: 'dev-echo', prompt_tokens: prompt, completion_tokens: completion } });

  describe('chat completions', () => {
    it('answers a `call NAME {json}` line with that tool call: content null, finish tool_calls, charged for the call', async () => {
      const { accountId, key } = await account();
      const messages: ChatMessage[] = [
        { role: 'system', content: 'You are a weather bot.' },
        { role: 'user', content: WEATHER_LINE },
      ];
      const completion = await sdk(gw, key).chat.completions.create({ model: 'dev-echo', messages, tools: [WEATHER, TIME] });

      expectValidAgainst('CreateChatCompletionResponse', completion);
      expect(completion.choices).toEqual([
        {
          index: 0,
          message: { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: expect.stringMatching(CALL_ID), type: 'function', function: { name: 'get_weather', arguments: WEATHER_ARGUMENTS } }] },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ]);
      const prompt = promptTokens(messages, [WEATHER, TIME]);
      const completionTokens = callTokens(['get_weather', WEATHER_ARGUMENTS]);
      expect(completion.usage).toMatchObject({ prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens });
      await expectCharged(accountId, prompt, completionTokens);
    });

    it('stops a call past the output limit as an upstream does: finish length, the arguments cut, no more than the limit counted and charged', async () => {
      const { accountId, key } = await account();
      const long = `call get_weather {"city": "${'Paris '.repeat(400)}"}`;
      const messages: ChatMessage[] = [{ role: 'user', content: `${WEATHER_LINE}\n${long}` }];
      const completion = await sdk(gw, key).chat.completions.create({ model: 'dev-echo', messages, tools: [WEATHER], max_completion_tokens: 40 });
      const [choice] = completion.choices;
      expect(choice.finish_reason).toBe('length');
      const calls = choice.message.tool_calls as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[];
      expect(calls.map((c) => c.function.name)).toEqual(['get_weather', 'get_weather']);
      expect(calls[0].function.arguments).toBe(WEATHER_ARGUMENTS);
      expect(calls[1].function.arguments.startsWith('{"city":"Paris Paris')).toBe(true);
      expect(() => JSON.parse(calls[1].function.arguments)).toThrow();
      const tokens = callTokens(...calls.map((c) => [c.function.name, c.function.arguments] as [string, string]));
      expect(tokens).toBeLessThanOrEqual(40);
      expect(completion.usage!.completion_tokens).toBe(tokens);
      await expectCharged(accountId, promptTokens(messages, [WEATHER]), tokens);
    });

    it("without a limit in the body, the model's max_output_tokens is the limit: a huge call times n is answered, not a 500", async () => {
      const { key } = await admin.createAccount({ creditsUsd: '50' });
      const huge = `call get_weather {"city": "${'x'.repeat(2_000_000)}"}`;
      const res = await postChat(gw, key, { model: 'dev-echo', messages: [{ role: 'user', content: huge }], tools: [WEATHER], n: 16 });
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      expect(body.choices).toHaveLength(16);
      expect(body.choices[0].finish_reason).toBe('length');
      // config/gateway.yaml: dev-echo's max_output_tokens is 4096; the usage counts the 16 choices.
      expect(body.usage.completion_tokens).toBeLessThanOrEqual(16 * 4096);
    });

    it('answers several call lines with as many calls, in their order, each with its own id', async () => {
      const { key } = await account();
      const completion = await sdk(gw, key).chat.completions.create({ model: 'dev-echo', messages: [{ role: 'user', content: TWO_CALLS }], tools: [WEATHER, TIME] });

      const calls = completion.choices[0].message.tool_calls as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[];
      expect(calls.map((c) => [c.function.name, c.function.arguments])).toEqual([
        ['get_weather', WEATHER_ARGUMENTS],
        ['get_time', TIME_ARGUMENTS],
      ]);
      expect(calls[0].id).not.toBe(calls[1].id);
      expect(completion.usage?.completion_tokens).toBe(callTokens(['get_weather', WEATHER_ARGUMENTS], ['get_time', TIME_ARGUMENTS]));
    });

    it('streams the calls in OpenAI chunks: id, type and name first, then the arguments in several deltas; finish tool_calls; usage; charged', async () => {
      const { accountId, key } = await account();
      const messages: ChatMessage[] = [{ role: 'user', content: TWO_CALLS }];
      const res = await postChat(gw, key, { model: 'dev-echo', messages, tools: [WEATHER, TIME], stream: true, stream_options: { include_usage: true } });
      expect(res.status).toBe(200);
      const data = await readSseData(res);
      expect(data.at(-1)).toBe('[DONE]');
      const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
      for (const chunk of chunks) expectValidAgainst('CreateChatCompletionStreamResponse', chunk);

      const deltas = chunks.filter((c) => c.choices.length > 0).map((c) => c.choices[0].delta);
      const callDeltas = deltas.filter((d) => d.tool_calls).map((d) => d.tool_calls[0]);
      const opening = callDeltas.filter((d) => d.id);
      expect(opening).toEqual([
        { index: 0, id: expect.stringMatching(CALL_ID), type: 'function', function: { name: 'get_weather', arguments: '' } },
        { index: 1, id: expect.stringMatching(CALL_ID), type: 'function', function: { name: 'get_time', arguments: '' } },
      ]);
      expect(deltas[0]).toMatchObject({ role: 'assistant', content: null });
      for (const [index, args] of [WEATHER_ARGUMENTS, TIME_ARGUMENTS].entries()) {
        const pieces = callDeltas.filter((d) => d.index === index && !d.id).map((d) => d.function.arguments);
        expect(pieces.length).toBeGreaterThan(1);
        expect(pieces.join('')).toBe(args);
      }
      expect(chunks.flatMap((c) => c.choices.map((choice: { finish_reason: unknown }) => choice.finish_reason)).filter(Boolean)).toEqual(['tool_calls']);
      const prompt = promptTokens(messages, [WEATHER, TIME]);
      const completion = callTokens(['get_weather', WEATHER_ARGUMENTS], ['get_time', TIME_ARGUMENTS]);
      expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion } });
      await expectCharged(accountId, prompt, completion);
    });

    it("streams calls that the openai SDK's stream helper assembles", async () => {
      const { key } = await account();
      const stream = sdk(gw, key).chat.completions.stream({ model: 'dev-echo', messages: [{ role: 'user', content: TWO_CALLS }], tools: [WEATHER, TIME] });
      const final = await stream.finalChatCompletion();
      expect(final.choices[0].finish_reason).toBe('tool_calls');
      expect(final.choices[0].message.tool_calls).toEqual([
        { id: expect.stringMatching(CALL_ID), type: 'function', function: { name: 'get_weather', arguments: WEATHER_ARGUMENTS } },
        { id: expect.stringMatching(CALL_ID), type: 'function', function: { name: 'get_time', arguments: TIME_ARGUMENTS } },
      ]);
    });

    it('calls a tool forced by name without a call line with the least arguments its schema requires, JSON and streamed', async () => {
      const { key } = await account();
      const client = sdk(gw, key);
      const body = {
        model: 'dev-echo',
        messages: [{ role: 'user' as const, content: 'Find the config files.' }],
        tools: [WEATHER, SEARCH],
        tool_choice: { type: 'function' as const, function: { name: 'search_files' } },
      };
      const completion = await client.chat.completions.create(body);
      expect(completion.choices[0]).toMatchObject({
        finish_reason: 'tool_calls',
        message: { content: null, tool_calls: [{ type: 'function', function: { name: 'search_files', arguments: SEARCH_LEAST_ARGUMENTS } }] },
      });
      expect(completion.usage?.completion_tokens).toBe(callTokens(['search_files', SEARCH_LEAST_ARGUMENTS]));

      const streamed = await client.chat.completions.stream(body).finalChatCompletion();
      expect(streamed.choices[0].message.tool_calls).toEqual([
        expect.objectContaining({ function: expect.objectContaining({ name: 'search_files', arguments: SEARCH_LEAST_ARGUMENTS }) }),
      ]);
    });

    it('calls only the forced tool: a call line for another tool is no call', async () => {
      const { key } = await account();
      const completion = await sdk(gw, key).chat.completions.create({
        model: 'dev-echo',
        messages: [{ role: 'user', content: WEATHER_LINE }],
        tools: [WEATHER, TIME],
        tool_choice: { type: 'function', function: { name: 'get_time' } },
      });
      const calls = completion.choices[0].message.tool_calls as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[];
      expect(calls.map((c) => c.function)).toEqual([{ name: 'get_time', arguments: '{}' }]);
    });

    it('answers tool_choice "required" without a call line with the first offered tool', async () => {
      const { key } = await account();
      const completion = await sdk(gw, key).chat.completions.create({ model: 'dev-echo', messages: [{ role: 'user', content: 'Anything.' }], tools: [WEATHER, TIME], tool_choice: 'required' });
      const calls = completion.choices[0].message.tool_calls as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[];
      expect(calls.map((c) => c.function)).toEqual([{ name: 'get_weather', arguments: '{"city":""}' }]);
      expect(completion.choices[0].finish_reason).toBe('tool_calls');
    });

    it.each([
      ['tool_choice "none"', WEATHER_LINE, { tool_choice: 'none' as const, tools: [WEATHER] }],
      ['no tools', WEATHER_LINE, {}],
      ['a tool not offered', 'call get_stock {"ticker": "ACME"}', { tools: [WEATHER] }],
      ['arguments that are not a JSON object', 'call get_weather ["Paris"]', { tools: [WEATHER] }],
      ['a line that only mentions a call', `Please ${WEATHER_LINE}`, { tools: [WEATHER] }],
    ])('echoes as before with %s', async (_, text, extra) => {
      const { key } = await account();
      const completion = await sdk(gw, key).chat.completions.create({ model: 'dev-echo', messages: [{ role: 'user', content: text }], ...extra });
      expect(completion.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: text } });
      expect(completion.choices[0].message.tool_calls).toBeUndefined();
      expect(completion.usage?.completion_tokens).toBe(countTokens(text));
    });

    it("answers the tool results' text after a tool turn, JSON and streamed, and is charged for it", async () => {
      const { accountId, key } = await account();
      const client = sdk(gw, key);
      const question: ChatMessage = { role: 'user', content: TWO_CALLS };
      const first = await client.chat.completions.create({ model: 'dev-echo', messages: [question], tools: [WEATHER, TIME] });
      const calls = first.choices[0].message.tool_calls as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[];
      const results = ['{"celsius": 21, "sky": "clear"}', '14:05 CEST'];
      const messages: ChatMessage[] = [
        question,
        { role: 'assistant', content: null, tool_calls: calls },
        ...calls.map((call, i): ChatMessage => ({ role: 'tool', tool_call_id: call.id, content: results[i] })),
      ];

      const second = await client.chat.completions.create({ model: 'dev-echo', messages, tools: [WEATHER, TIME] });
      const answer = results.join('\n');
      expect(second.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant', content: answer } });
      expect(second.choices[0].message.tool_calls).toBeUndefined();
      const prompt = promptTokens(messages, [WEATHER, TIME]);
      expect(second.usage).toMatchObject({ prompt_tokens: prompt, completion_tokens: countTokens(answer) });

      let streamed = '';
      for await (const chunk of await client.chat.completions.create({ model: 'dev-echo', messages, tools: [WEATHER, TIME], stream: true })) {
        streamed += chunk.choices[0]?.delta.content ?? '';
      }
      expect(streamed).toBe(answer);

      const cost =
        costMicros(DEV_ECHO, promptTokens([question], [WEATHER, TIME]), callTokens(['get_weather', WEATHER_ARGUMENTS], ['get_time', TIME_ARGUMENTS])) +
        2n * costMicros(DEV_ECHO, prompt, countTokens(answer));
      expect((await moneyOf(db, accountId)).balance).toBe(CREDITS - cost);
    });

    it('answers a text content array line by line, each part ending its line', async () => {
      const { key } = await account();
      const completion = await sdk(gw, key).chat.completions.create({
        model: 'dev-echo',
        messages: [{ role: 'user', content: [{ type: 'text', text: '<env>cwd=/srv</env>' }, { type: 'text', text: TIME_LINE }] }],
        tools: [TIME],
      });
      const calls = completion.choices[0].message.tool_calls as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[];
      expect(calls.map((c) => c.function)).toEqual([{ name: 'get_time', arguments: TIME_ARGUMENTS }]);
    });
  });

  describe('the Responses API', () => {
    const tools: OpenAI.Responses.FunctionTool[] = [WEATHER, TIME].map((t) => ({
      type: 'function',
      name: t.function.name,
      parameters: t.function.parameters ?? null,
      strict: false,
    }));

    it('answers call lines with function_call items, then a function_call_output turn with the output text', async () => {
      const { accountId, key } = await account();
      const client = sdk(gw, key);
      const first = await client.responses.create({ model: 'dev-echo', input: TWO_CALLS, tools });

      expectValidAgainst('Response', first);
      expect(first.status).toBe('completed');
      expect(first.output).toEqual([
        expect.objectContaining({ type: 'function_call', status: 'completed', call_id: expect.stringMatching(CALL_ID), name: 'get_weather', arguments: WEATHER_ARGUMENTS }),
        expect.objectContaining({ type: 'function_call', status: 'completed', call_id: expect.stringMatching(CALL_ID), name: 'get_time', arguments: TIME_ARGUMENTS }),
      ]);
      expect(first.usage?.output_tokens).toBe(callTokens(['get_weather', WEATHER_ARGUMENTS], ['get_time', TIME_ARGUMENTS]));

      const calls = first.output as OpenAI.Responses.ResponseFunctionToolCall[];
      const second = await client.responses.create({
        model: 'dev-echo',
        input: [
          { role: 'user', content: TWO_CALLS },
          ...calls,
          { type: 'function_call_output', call_id: calls[0].call_id, output: 'Sunny, 21 °C' },
          { type: 'function_call_output', call_id: calls[1].call_id, output: '14:05' },
        ],
        tools,
      });
      expectValidAgainst('Response', second);
      expect(second.output_text).toBe('Sunny, 21 °C\n14:05');
      expect(second.usage?.output_tokens).toBe(countTokens('Sunny, 21 °C\n14:05'));

      const cost = costMicros(DEV_ECHO, first.usage!.input_tokens, first.usage!.output_tokens) + costMicros(DEV_ECHO, second.usage!.input_tokens, second.usage!.output_tokens);
      expect((await moneyOf(db, accountId)).balance).toBe(CREDITS - cost);
    });

    it('streams function calls with argument deltas, then the output text after function_call_output', async () => {
      const { accountId, key } = await account();
      const client = sdk(gw, key);
      const stream = client.responses.stream({ model: 'dev-echo', input: WEATHER_LINE, tools });
      const argumentDeltas: string[] = [];
      stream.on('response.function_call_arguments.delta', (event) => argumentDeltas.push(event.delta));
      const first = await stream.finalResponse();

      expect(first.output).toEqual([expect.objectContaining({ type: 'function_call', name: 'get_weather', arguments: WEATHER_ARGUMENTS, call_id: expect.stringMatching(CALL_ID) })]);
      expect(argumentDeltas.length).toBeGreaterThan(1);
      expect(argumentDeltas.join('')).toBe(WEATHER_ARGUMENTS);
      const call = first.output[0] as OpenAI.Responses.ResponseFunctionToolCall;

      const second = await client.responses
        .stream({
          model: 'dev-echo',
          input: [{ role: 'user', content: WEATHER_LINE }, call, { type: 'function_call_output', call_id: call.call_id, output: 'Sunny, 21 °C' }],
          tools,
        })
        .finalResponse();
      expect(second.output_text).toBe('Sunny, 21 °C');

      const cost = costMicros(DEV_ECHO, first.usage!.input_tokens, first.usage!.output_tokens) + costMicros(DEV_ECHO, second.usage!.input_tokens, second.usage!.output_tokens);
      expect(first.usage!.output_tokens).toBe(callTokens(['get_weather', WEATHER_ARGUMENTS]));
      expect((await moneyOf(db, accountId)).balance).toBe(CREDITS - cost);
    });

    it('answers a required tool_choice with the least arguments', async () => {
      const { key } = await account();
      const response = await sdk(gw, key).responses.create({ model: 'dev-echo', input: 'Go.', tools, tool_choice: 'required' });
      expect(response.output).toEqual([expect.objectContaining({ type: 'function_call', name: 'get_weather', arguments: '{"city":""}' })]);
    });
  });

  describe("Anthropic's Messages API", () => {
    const tools: Anthropic.Tool[] = [
      { name: 'get_weather', description: 'The weather in a city', input_schema: WEATHER_SCHEMA as Anthropic.Tool.InputSchema },
      { name: 'get_time', input_schema: { type: 'object', properties: { zone: { type: 'string' } } } },
    ];

    it('answers call lines with tool_use blocks (stop_reason tool_use), then a tool_result turn with its text', async () => {
      const { accountId, key } = await account();
      const client = anthropic(gw, key);
      const question: Anthropic.MessageParam = { role: 'user', content: TWO_CALLS };
      const first = await client.messages.create({ model: 'dev-echo', max_tokens: 1024, messages: [question], tools });

      expect(first.stop_reason).toBe('tool_use');
      expect(first.content).toEqual([
        { type: 'tool_use', id: expect.stringMatching(CALL_ID), name: 'get_weather', input: { city: 'Paris', unit: 'celsius' } },
        { type: 'tool_use', id: expect.stringMatching(CALL_ID), name: 'get_time', input: { zone: 'Europe/Paris' } },
      ]);
      expect(first.usage.output_tokens).toBe(callTokens(['get_weather', WEATHER_ARGUMENTS], ['get_time', TIME_ARGUMENTS]));

      const uses = first.content as Anthropic.ToolUseBlock[];
      const second = await client.messages.create({
        model: 'dev-echo',
        max_tokens: 1024,
        messages: [
          question,
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: uses[0].id, content: 'Sunny, 21 °C' },
              { type: 'tool_result', tool_use_id: uses[1].id, content: [{ type: 'text', text: '14:05' }] },
            ],
          },
        ],
        tools,
      });
      expect(second.stop_reason).toBe('end_turn');
      expect(second.content).toEqual([{ type: 'text', text: 'Sunny, 21 °C\n14:05' }]);
      expect(second.usage.output_tokens).toBe(countTokens('Sunny, 21 °C\n14:05'));

      const cost = costMicros(DEV_ECHO, first.usage.input_tokens, first.usage.output_tokens) + costMicros(DEV_ECHO, second.usage.input_tokens, second.usage.output_tokens);
      expect((await moneyOf(db, accountId)).balance).toBe(CREDITS - cost);
    });

    it('streams tool_use blocks with input_json_delta, then the tool_result turn, through .stream()', async () => {
      const { accountId, key } = await account();
      const client = anthropic(gw, key);
      const question: Anthropic.MessageParam = { role: 'user', content: WEATHER_LINE };
      const stream = client.messages.stream({ model: 'dev-echo', max_tokens: 1024, messages: [question], tools });
      const partial: string[] = [];
      stream.on('inputJson', (delta) => partial.push(delta));
      const first = await stream.finalMessage();

      expect(first.stop_reason).toBe('tool_use');
      expect(first.content).toEqual([{ type: 'tool_use', id: expect.stringMatching(CALL_ID), name: 'get_weather', input: { city: 'Paris', unit: 'celsius' } }]);
      expect(partial.length).toBeGreaterThan(1);
      expect(partial.join('')).toBe(WEATHER_ARGUMENTS);

      const use = first.content[0] as Anthropic.ToolUseBlock;
      const second = await client.messages
        .stream({
          model: 'dev-echo',
          max_tokens: 1024,
          messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Sunny, 21 °C' }] }],
          tools,
        })
        .finalMessage();
      expect(second.stop_reason).toBe('end_turn');
      expect(second.content).toEqual([expect.objectContaining({ type: 'text', text: 'Sunny, 21 °C' })]);

      const cost = costMicros(DEV_ECHO, first.usage.input_tokens, first.usage.output_tokens) + costMicros(DEV_ECHO, second.usage.input_tokens, second.usage.output_tokens);
      expect((await moneyOf(db, accountId)).balance).toBe(CREDITS - cost);
    });

    it('answers tool_choice any with the first tool and tool_choice tool with that tool, with their least arguments', async () => {
      const { key } = await account();
      const client = anthropic(gw, key);
      const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Go.' }];
      const any = await client.messages.create({ model: 'dev-echo', max_tokens: 1024, messages, tools, tool_choice: { type: 'any' } });
      expect(any.content).toEqual([expect.objectContaining({ type: 'tool_use', name: 'get_weather', input: { city: '' } })]);
      const named = await client.messages.create({ model: 'dev-echo', max_tokens: 1024, messages, tools, tool_choice: { type: 'tool', name: 'get_time' } });
      expect(named.content).toEqual([expect.objectContaining({ type: 'tool_use', name: 'get_time', input: {} })]);
    });
  });

  describe('n choices', () => {
    const TEXT = 'Grüß dich — こんにちは 👋, three ways to say hello.';
    const messages: ChatMessage[] = [{ role: 'user', content: TEXT }];
    const PROMPT = promptTokens(messages);

    it('answers n: 2 in JSON with two identical choices, counting and charging the completion tokens of both', async () => {
      const one = await account();
      const single = await sdk(gw, one.key).chat.completions.create({ model: 'dev-echo', messages, n: 1 });
      expect(single.usage).toMatchObject({ prompt_tokens: PROMPT, completion_tokens: countTokens(TEXT) });

      const two = await account();
      const double = await sdk(gw, two.key).chat.completions.create({ model: 'dev-echo', messages, n: 2 });
      expectValidAgainst('CreateChatCompletionResponse', double);
      expect(double.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([
        [0, TEXT, 'stop'],
        [1, TEXT, 'stop'],
      ]);
      expect(double.usage).toMatchObject({ prompt_tokens: PROMPT, completion_tokens: 2 * single.usage!.completion_tokens, total_tokens: PROMPT + 2 * single.usage!.completion_tokens });

      await expectCharged(one.accountId, PROMPT, countTokens(TEXT));
      await expectCharged(two.accountId, PROMPT, 2 * countTokens(TEXT));
    });

    it('streams n: 2: each choice its role, words and finish under its own index, the usage counting both, charged for both', async () => {
      const { accountId, key } = await account();
      const stream = await sdk(gw, key).chat.completions.create({ model: 'dev-echo', messages, n: 2, stream: true, stream_options: { include_usage: true } });
      const text = new Map<number, string>();
      const finishes = new Map<number, string>();
      const usages: OpenAI.CompletionUsage[] = [];
      for await (const chunk of stream) {
        expect(chunk.choices.length).toBeLessThanOrEqual(1);
        for (const choice of chunk.choices) {
          text.set(choice.index, (text.get(choice.index) ?? '') + (choice.delta.content ?? ''));
          if (choice.finish_reason) finishes.set(choice.index, choice.finish_reason);
        }
        if (chunk.usage) usages.push(chunk.usage);
      }
      expect([...text.entries()].sort()).toEqual([
        [0, TEXT],
        [1, TEXT],
      ]);
      expect([...finishes.entries()].sort()).toEqual([
        [0, 'stop'],
        [1, 'stop'],
      ]);
      expect(usages).toEqual([expect.objectContaining({ prompt_tokens: PROMPT, completion_tokens: 2 * countTokens(TEXT) })]);
      await expectCharged(accountId, PROMPT, 2 * countTokens(TEXT));
    });

    it('interleaves the streamed choices as OpenAI does: every step once per index', async () => {
      const { key } = await account();
      const res = await postChat(gw, key, { model: 'dev-echo', messages, n: 3, stream: true });
      const chunks = (await readSseData(res)).slice(0, -1).map((d) => JSON.parse(d));
      for (const chunk of chunks) expectValidAgainst('CreateChatCompletionStreamResponse', chunk);
      expect(chunks.map((c) => c.choices[0].index)).toEqual(chunks.map((_, i) => i % 3));
    });

    it('answers n: 2 with the same tool calls in both choices, charging both', async () => {
      const { accountId, key } = await account();
      const callMessages: ChatMessage[] = [{ role: 'user', content: WEATHER_LINE }];
      const completion = await sdk(gw, key).chat.completions.create({ model: 'dev-echo', messages: callMessages, tools: [WEATHER], n: 2 });
      expect(completion.choices).toHaveLength(2);
      expect(completion.choices[1]).toEqual({ ...completion.choices[0], index: 1 });
      expect(completion.choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { tool_calls: [{ function: { name: 'get_weather', arguments: WEATHER_ARGUMENTS } }] } });
      const prompt = promptTokens(callMessages, [WEATHER]);
      expect(completion.usage).toMatchObject({ prompt_tokens: prompt, completion_tokens: 2 * callTokens(['get_weather', WEATHER_ARGUMENTS]) });
      await expectCharged(accountId, prompt, 2 * callTokens(['get_weather', WEATHER_ARGUMENTS]));
    });
  });
});
