import { countTokens } from 'gpt-tokenizer';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DataSource } from 'typeorm';
import { countPromptTokens } from '../src/providers/token-count';
import { AdminClient } from './support/admin-client';
import {
  classCostMicros,
  ClassTokens,
  costMicros,
  holdMicros,
  moneyOf,
  parseSseData,
  postChat,
  PricedModel,
  sdk,
  UsageRow,
  usd,
  useFakeGateway,
  waitForUsageRows,
} from './support/chat-support';
import { FakeReply, FakeUpstream } from './support/fake-upstream';
import { anthropic } from './support/messages-support';
import { expectValidAgainst } from './support/openapi';
import { deploymentColumns, RoutedModel, useRoutingGateway } from './support/routing-support';
import { TEST_ADMIN_TOKEN, TestApp } from './support/test-app';

// gpt-4o-audio-preview's prices (input 2.50, output 10, audio 40 / 80 per million), a cached input at half
// the input price (gpt-4o's) and cache writes at 1.25 × input (5 minutes) and 2 × input (1 hour), Anthropic's ratios.
const CLASSED: PricedModel = {
  id: 'classed-chat',
  input: 2.5,
  cachedInput: 1.25,
  cacheWrite: 3.125,
  cacheWrite1h: 6.25,
  audioInput: 40,
  output: 10,
  audioOutput: 80,
  maxOutput: 4096,
};
// The same base prices, no class prices: every class costs its total's price.
const BASE_ONLY: PricedModel = { id: 'base-only-chat', input: 2.5, output: 10, maxOutput: 4096 };
// claude-sonnet-4-5's prices without a 1-hour cache-write price: the 1-hour writes cost the cache-write price.
const WRITE_PRICED: PricedModel = { id: 'write-priced-chat', input: 3, cachedInput: 0.3, cacheWrite: 3.75, output: 15, maxOutput: 4096 };
// A 1-hour cache write dearer than every other input class: the hold prices the prompt bound at it.
const HOUR_DEAR: PricedModel = { id: 'hour-dear-chat', input: 3, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 60, output: 15, maxOutput: 4096 };

// A long system prompt, as an agent re-sends on every call (the part a provider caches), and a question.
const MESSAGES = [
  { role: 'system' as const, content: 'You are a weather assistant. Answer briefly, in words and in audio. '.repeat(40) },
  { role: 'user' as const, content: 'What is the weather in Paris?' },
];
const MAX_TOKENS = 1000;
const PROMPT = 2000;
const COMPLETION = 300;
const CREDITS = 1_000_000n;

type Details = NonNullable<FakeReply['usageDetails']>;
/** What the usage record keeps of a class: the expected counts, reasoning included (it costs as output). */
type Expected = ClassTokens & { reasoning?: number };

const EACH_CLASS: [string, Details, Expected][] = [
  ['cached', { prompt: { cached_tokens: 1536 } }, { prompt: PROMPT, completion: COMPLETION, cached: 1536 }],
  ['cache-write', { prompt: { cache_write_tokens: 1024 } }, { prompt: PROMPT, completion: COMPLETION, cacheWrite: 1024 }],
  [
    '1-hour cache-write',
    { prompt: { cache_write_tokens: 1024, cache_write_1h_tokens: 640 } },
    { prompt: PROMPT, completion: COMPLETION, cacheWrite: 1024, cacheWrite1h: 640 },
  ],
  ['audio input', { prompt: { audio_tokens: 700 } }, { prompt: PROMPT, completion: COMPLETION, audioIn: 700 }],
  ['audio output', { completion: { audio_tokens: 250 } }, { prompt: PROMPT, completion: COMPLETION, audioOut: 250 }],
  ['reasoning', { completion: { reasoning_tokens: 192 } }, { prompt: PROMPT, completion: COMPLETION, reasoning: 192 }],
];
const ALL_CLASSES: Details = {
  prompt: { cached_tokens: 1024, cache_write_tokens: 256, cache_write_1h_tokens: 96, audio_tokens: 300 },
  completion: { audio_tokens: 120, reasoning_tokens: 64 },
};
const ALL_EXPECTED: Expected = { prompt: PROMPT, completion: COMPLETION, cached: 1024, cacheWrite: 256, cacheWrite1h: 96, audioIn: 300, audioOut: 120, reasoning: 64 };

/** The class columns a usage row must show for `expected`. */
function classColumns(expected: Expected): Partial<UsageRow> {
  return {
    prompt_tokens: expected.prompt,
    completion_tokens: expected.completion,
    cached_tokens: expected.cached ?? 0,
    cache_write_tokens: expected.cacheWrite ?? 0,
    cache_write_1h_tokens: expected.cacheWrite1h ?? 0,
    audio_input_tokens: expected.audioIn ?? 0,
    audio_output_tokens: expected.audioOut ?? 0,
    reasoning_tokens: expected.reasoning ?? 0,
  };
}

const run = promisify(execFile);

describe('token classes: every class charged at its own price (issue 23)', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useFakeGateway([CLASSED, BASE_ONLY, WRITE_PRICED, HOUR_DEAR]);
  beforeAll(() => ({ fake, gw, admin, db } = suite));
  beforeEach(() => {
    fake.resetState();
    fake.reply = { content: 'Sunny, 21 degrees.', promptTokens: PROMPT, completionTokens: COMPLETION };
  });

  /**
   * The account's one request: charged exactly the formula, never more than its hold, with its usage record
   * (class columns, endpoint, streamed), one ledger entry, and the ledger equal to the balance.
   */
  async function expectCharged(accountId: string, expected: Expected, row: Partial<UsageRow> = {}, model = CLASSED): Promise<bigint> {
    const cost = classCostMicros(model, expected);
    expect(cost).toBeLessThanOrEqual(holdMicros(model, MESSAGES, MAX_TOKENS));
    const money = await moneyOf(db, accountId);
    expect(money).toMatchObject({ balance: CREDITS - cost, reserved: 0n, ledgerSum: CREDITS - cost, openHolds: 0 });
    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ model: model.id, status: 200, error_code: null, cost_micros: String(cost), ...classColumns(expected), ...row })]);
    expect(money.charges).toEqual([{ amount: cost, requestId: rows[0].request_id }]);
    return cost;
  }

  describe('JSON answers', () => {
    it.each(EACH_CLASS)('charges %s tokens at their own price, and the client sees the upstream usage unchanged', async (_, details, expected) => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.usageDetails = details;
      const completion = await sdk(gw, key).chat.completions.create({ model: CLASSED.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
      expectValidAgainst('CreateChatCompletionResponse', completion);
      expect(completion.usage).toEqual({ ...fake.usageBlock(COMPLETION), cost: expect.any(Number) });
      await expectCharged(accountId, expected, { streamed: false, endpoint: '/v1/chat/completions' });
    });

    it('charges every class together, each at its price', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.usageDetails = ALL_CLASSES;
      const completion = await sdk(gw, key).chat.completions.create({ model: CLASSED.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
      expect(completion.usage).toEqual({ ...fake.usageBlock(COMPLETION), cost: expect.any(Number) });
      // (2,000 − 1,024 − 256 − 300) × 2.5 + 1,024 × 1.25 + (256 − 96) × 3.125 + 96 × 6.25 + 300 × 40 + (300 − 120) × 10 + 120 × 80
      expect(await expectCharged(accountId, ALL_EXPECTED)).toBe(BigInt(420 * 2.5 + 1024 * 1.25 + 160 * 3.125 + 96 * 6.25 + 300 * 40 + 180 * 10 + 120 * 80));
    });

    it('charges cached, 5-minute and 1-hour cache-write tokens each at its price, JSON and streamed alike', async () => {
      const details: Details = { prompt: { cached_tokens: 1200, cache_write_tokens: 500, cache_write_1h_tokens: 100 } };
      const expected: Expected = { prompt: PROMPT, completion: COMPLETION, cached: 1200, cacheWrite: 500, cacheWrite1h: 100 };
      // (2,000 − 1,200 − 500) × 2.5 + 1,200 × 1.25 + (500 − 100) × 3.125 + 100 × 6.25 + 300 × 10
      const cost = BigInt(300 * 2.5 + 1200 * 1.25 + 400 * 3.125 + 100 * 6.25 + 300 * 10);
      const json = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.usageDetails = details;
      await sdk(gw, json.key).chat.completions.create({ model: CLASSED.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
      expect(await expectCharged(json.accountId, expected, { streamed: false })).toBe(cost);
      const streamed = await admin.createAccount({ creditsUsd: '1' });
      const data = await readAll(await postChat(gw, streamed.key, { model: CLASSED.id, messages: MESSAGES, max_tokens: MAX_TOKENS, stream: true }));
      expect(data.at(-1)).toBe('[DONE]');
      expect(await expectCharged(streamed.accountId, expected, { streamed: true })).toBe(cost);
    });

    it('prices 1-hour cache writes at the cache-write price when the entry sets none of their own', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.usageDetails = ALL_CLASSES;
      await sdk(gw, key).chat.completions.create({ model: WRITE_PRICED.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
      // (2,000 − 1,024 − 256 − 300) × 3 + 1,024 × 0.3 + 256 × 3.75 (96 of them 1-hour writes, at the same price) + 300 × 3 + 300 × 15
      const cost = await expectCharged(accountId, ALL_EXPECTED, {}, WRITE_PRICED);
      expect(cost).toBe(BigInt(Math.ceil(420 * 3 + 1024 * 0.3 + 256 * 3.75 + 300 * 3 + 300 * 15)));
    });

    it("charges the classes of a model without class prices at its base prices, and still records them", async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.usageDetails = ALL_CLASSES;
      await sdk(gw, key).chat.completions.create({ model: BASE_ONLY.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
      const cost = await expectCharged(accountId, ALL_EXPECTED, {}, BASE_ONLY);
      expect(cost).toBe(costMicros(BASE_ONLY, PROMPT, COMPLETION));
    });

    it('cuts subtotals over their total to fit and counts unreadable ones as 0, and passes them to the client as they came', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.usageDetails = {
        // 1,500 cached fit; the cache write is cut to the 500 left, and the 1-hour writes to it; audio as a string counts 0.
        prompt: { cached_tokens: 1500, cache_write_tokens: 800, cache_write_1h_tokens: 700, audio_tokens: '300' },
        // Audio output over the total: all 300; reasoning not a whole number: 0.
        completion: { audio_tokens: 400, reasoning_tokens: 5.5 },
      };
      const completion = await sdk(gw, key).chat.completions.create({ model: CLASSED.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
      expect(completion.usage).toEqual({ ...fake.usageBlock(COMPLETION), cost: expect.any(Number) });
      expect((completion.usage as any).prompt_tokens_details.audio_tokens).toBe('300');
      await expectCharged(accountId, { prompt: PROMPT, completion: COMPLETION, cached: 1500, cacheWrite: 500, cacheWrite1h: 500, audioOut: 300 });
    });

    it('counts 1-hour cache writes that are negative or not whole numbers as 0', async () => {
      for (const value of [-64, 12.5]) {
        const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
        fake.reply.usageDetails = { prompt: { cache_write_tokens: 256, cache_write_1h_tokens: value } };
        const completion = await sdk(gw, key).chat.completions.create({ model: CLASSED.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
        expect(completion.usage).toEqual({ ...fake.usageBlock(COMPLETION), cost: expect.any(Number) });
        await expectCharged(accountId, { prompt: PROMPT, completion: COMPLETION, cacheWrite: 256 });
      }
    });
  });

  describe('streams', () => {
    it.each(EACH_CLASS)('charges %s tokens from the usage chunk the client asked for, which it gets unchanged', async (_, details, expected) => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.usageDetails = details;
      const stream = await sdk(gw, key).chat.completions.create({
        model: CLASSED.id,
        messages: MESSAGES,
        max_tokens: MAX_TOKENS,
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks: any[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      for (const chunk of chunks) expectValidAgainst('CreateChatCompletionStreamResponse', chunk);
      expect(chunks.filter((c) => c.usage)).toEqual([chunks.at(-1)]);
      expect(chunks.at(-1)).toMatchObject({ choices: [], model: CLASSED.id });
      expect(chunks.at(-1).usage).toEqual({ ...fake.usageBlock(COMPLETION), cost: expect.any(Number) });
      await expectCharged(accountId, expected, { streamed: true });
    });

    it('charges every class from the usage chunk a client that did not ask for it never sees', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.usageDetails = ALL_CLASSES;
      const res = await postChat(gw, key, { model: CLASSED.id, messages: MESSAGES, max_tokens: MAX_TOKENS, stream: true });
      const data = await readAll(res);
      expect(data.at(-1)).toBe('[DONE]');
      expect(data.slice(0, -1).every((d) => !('usage' in JSON.parse(d)))).toBe(true);
      expect(fake.requests[0].body.stream_options).toEqual({ include_usage: true });
      await expectCharged(accountId, ALL_EXPECTED, { streamed: true });
    });
  });

  describe('the Responses API', () => {
    const input = MESSAGES.map((m) => ({ role: m.role, content: m.content }));
    const responsesUsage = {
      input_tokens: PROMPT,
      input_tokens_details: { cached_tokens: 1024, cache_write_tokens: 256, cache_write_1h_tokens: 96 },
      output_tokens: COMPLETION,
      output_tokens_details: { reasoning_tokens: 64 },
      total_tokens: PROMPT + COMPLETION,
    };

    it("maps the details to input_tokens_details / output_tokens_details and charges every class (JSON)", async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.usageDetails = ALL_CLASSES;
      const response = await sdk(gw, key).responses.create({ model: CLASSED.id, input, max_output_tokens: MAX_TOKENS });
      expectValidAgainst('Response', response);
      expect(response.usage).toEqual({ ...responsesUsage, cost: expect.any(Number) });
      await expectCharged(accountId, ALL_EXPECTED, { endpoint: '/v1/responses', streamed: false });
    });

    it('maps the details into response.completed and charges every class (streamed)', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.usageDetails = ALL_CLASSES;
      const stream = await sdk(gw, key).responses.create({ model: CLASSED.id, input, max_output_tokens: MAX_TOKENS, stream: true });
      const events: any[] = [];
      for await (const event of stream) events.push(event);
      const completed = events.find((e) => e.type === 'response.completed');
      expect(completed.response.usage).toEqual({ ...responsesUsage, cost: expect.any(Number) });
      await expectCharged(accountId, ALL_EXPECTED, { endpoint: '/v1/responses', streamed: true });
    });
  });

  describe('the Messages API', () => {
    const messages = [{ role: 'user' as const, content: MESSAGES[0].content + MESSAGES[1].content }];
    // Anthropic's input_tokens leave out the cache reads and writes (2,000 − 1,024 − 256); cache_creation splits the writes by TTL.
    const split = { input_tokens: 720, output_tokens: COMPLETION, cache_read_input_tokens: 1024, cache_creation_input_tokens: 256 };
    const byTtl = { ephemeral_5m_input_tokens: 160, ephemeral_1h_input_tokens: 96 };

    it('answers cache_creation by TTL beside cache_creation_input_tokens, JSON and streamed, and charges every class', async () => {
      const json = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.usageDetails = ALL_CLASSES;
      const message = await anthropic(gw, json.key).messages.create({ model: CLASSED.id, max_tokens: MAX_TOKENS, messages });
      expect(message.usage).toEqual({ ...split, cache_creation: byTtl, cost: expect.any(Number) });
      const jsonCost = await expectCharged(json.accountId, ALL_EXPECTED, { endpoint: '/v1/messages', streamed: false });

      // Streamed: the final figures come with message_delta (the gateway knows them only at the end), cache_creation too.
      const streamed = await admin.createAccount({ creditsUsd: '1' });
      const events = await anthropic(gw, streamed.key).messages.create({ model: CLASSED.id, max_tokens: MAX_TOKENS, messages, stream: true });
      const deltas: unknown[] = [];
      for await (const event of events) if (event.type === 'message_delta') deltas.push(event.usage);
      expect(deltas).toEqual([{ ...split, cache_creation: byTtl, cost: expect.any(Number) }]);
      expect(await expectCharged(streamed.accountId, ALL_EXPECTED, { endpoint: '/v1/messages', streamed: true })).toBe(jsonCost);
    });

    it('leaves cache_creation out when the upstream does not tell the 1-hour writes apart', async () => {
      const { key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply.usageDetails = { prompt: { cached_tokens: 1024, cache_write_tokens: 256 } };
      const message = await anthropic(gw, key).messages.create({ model: CLASSED.id, max_tokens: MAX_TOKENS, messages });
      expect(message.usage).toEqual({ ...split, cost: expect.any(Number) });
      expect(message.usage).not.toHaveProperty('cache_creation');
    });
  });

  describe('without upstream usage: counted, tool calls included, at the base prices', () => {
    const TOOLS = [{ type: 'function' as const, function: { name: 'get_forecast', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } } } }];
    const CALL = { id: 'call_forecast', name: 'get_forecast', arguments: JSON.stringify({ city: 'Paris', days: 7, detail: 'hourly temperature, wind, rain and UV index '.repeat(6).trim() }) };
    const toolMessages = [{ role: 'user' as const, content: 'Forecast for Paris this week?' }];

    /** The gateway's own count: the prompt with its tool definitions, and what the answer produced. */
    async function expectCounted(accountId: string, produced: string, status = 200): Promise<UsageRow> {
      const [row] = await waitForUsageRows(db, accountId, 1);
      expect(row).toMatchObject({ status, ...classColumns({ prompt: row.prompt_tokens, completion: row.completion_tokens }) });
      expect(row.prompt_tokens).toBe(await countPromptTokens(toolMessages, [TOOLS]));
      if (status === 200) expect(row.completion_tokens).toBe(countTokens(produced));
      const cost = costMicros(CLASSED, row.prompt_tokens, row.completion_tokens);
      expect(row.cost_micros).toBe(String(cost));
      const money = await moneyOf(db, accountId);
      expect(money).toMatchObject({ balance: CREDITS - cost, reserved: 0n, ledgerSum: CREDITS - cost, openHolds: 0 });
      return row;
    }

    it('counts the name and arguments of a tool call in a JSON answer', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply = { content: '', promptTokens: 0, completionTokens: 0, toolCalls: [CALL], omitUsage: true };
      const completion = await sdk(gw, key).chat.completions.create({ model: CLASSED.id, messages: toolMessages, tools: TOOLS });
      expect(completion.usage).toBeUndefined();
      expect(completion.choices[0].message.tool_calls).toHaveLength(1);
      await expectCounted(accountId, CALL.name + CALL.arguments);
    });

    it('counts the name and argument deltas of a streamed tool call alike', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply = { content: '', promptTokens: 0, completionTokens: 0, toolCalls: [CALL], omitUsage: true, argumentPieces: 9 };
      const data = await readAll(await postChat(gw, key, { model: CLASSED.id, messages: toolMessages, tools: TOOLS, stream: true }));
      expect(data.at(-1)).toBe('[DONE]');
      await expectCounted(accountId, CALL.name + CALL.arguments);
    });

    it('charges a client that leaves in the middle of a tool call for the prompt and the name and arguments relayed so far', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply = { content: '', promptTokens: PROMPT, completionTokens: COMPLETION, toolCalls: [CALL], argumentPieces: 40, usageDetails: ALL_CLASSES };
      fake.chunkDelayMs = 40;
      const abort = new AbortController();
      const res = await postChat(gw, key, { model: CLASSED.id, messages: toolMessages, tools: TOOLS, stream: true }, { signal: abort.signal });
      expect(res.status).toBe(200);
      // Until the name and five pieces of the arguments have arrived, then hang up.
      const received = await readDeltasUntil(res, (deltas) => deltas.pieces >= 5);
      abort.abort();
      await fake.waitFor(() => fake.aborted().length === 1);

      const row = await expectCounted(accountId, '', 499);
      expect(received.text.startsWith(CALL.name)).toBe(true);
      // The upstream's usage chunk (with its classes) never came: the gateway counted what it relayed, tool call included.
      expect(row.completion_tokens).toBeGreaterThanOrEqual(countTokens(received.text));
      expect(row.completion_tokens).toBeLessThan(countTokens(CALL.name + CALL.arguments));
    });

    it('charges a client that leaves in the middle of text for what was relayed, at the base prices', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      const words = Array.from({ length: 40 }, (_, i) => `word${i}`);
      fake.reply = { content: words.join(' '), promptTokens: PROMPT, completionTokens: words.length, usageDetails: ALL_CLASSES };
      fake.chunkDelayMs = 40;
      const abort = new AbortController();
      const res = await postChat(gw, key, { model: CLASSED.id, messages: toolMessages, tools: TOOLS, stream: true, stream_options: { include_usage: true } }, { signal: abort.signal });
      const received = await readDeltasUntil(res, (deltas) => (deltas.text.match(/word/g) ?? []).length >= 4);
      abort.abort();
      await fake.waitFor(() => fake.aborted().length === 1);
      const row = await expectCounted(accountId, '', 499);
      expect(row.completion_tokens).toBeGreaterThanOrEqual(countTokens(received.text));
      expect(row.completion_tokens).toBeLessThan(countTokens(words.join(' ')));
    });
  });

  describe('the hold: the worst case of every class', () => {
    const hold = () => holdMicros(CLASSED, MESSAGES, MAX_TOKENS);
    const promptBound = Buffer.byteLength(JSON.stringify(MESSAGES)) + 3;

    it('holds the prompt bound at the highest input-class price and max_tokens at the highest output-class price', async () => {
      // 40 (audio input) and 80 (audio output) micro-USD per token.
      expect(hold()).toBe(BigInt(promptBound * 40 + MAX_TOKENS * 80));
      const short = await admin.createAccount({ creditsUsd: usd(hold() - 1n) });
      const err = await sdk(gw, short.key).chat.completions.create({ model: CLASSED.id, messages: MESSAGES, max_tokens: MAX_TOKENS }).catch((e) => e);
      expect(err).toMatchObject({ status: 402, code: 'insufficient_credits' });
      expect(err.message).toContain(`$${usd(hold())}`);
      expect(fake.requests).toHaveLength(0);

      // Exactly the hold: served, and an answer that is all audio, prompt bound and allowance, costs exactly the hold.
      const exact = await admin.createAccount({ creditsUsd: usd(hold()) });
      fake.reply = { content: 'x', promptTokens: promptBound, completionTokens: MAX_TOKENS, usageDetails: { prompt: { audio_tokens: promptBound }, completion: { audio_tokens: MAX_TOKENS } } };
      await sdk(gw, exact.key).chat.completions.create({ model: CLASSED.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
      expect(classCostMicros(CLASSED, { prompt: promptBound, completion: MAX_TOKENS, audioIn: promptBound, audioOut: MAX_TOKENS })).toBe(hold());
      const money = await moneyOf(db, exact.accountId);
      expect(money).toMatchObject({ balance: 0n, reserved: 0n, ledgerSum: 0n, openHolds: 0 });
      expect(money.charges.map((c) => c.amount)).toEqual([hold()]);
    });

    it('holds the prompt bound at the 1-hour cache-write price when it is the highest input-class price', async () => {
      const hourHold = holdMicros(HOUR_DEAR, MESSAGES, MAX_TOKENS);
      expect(hourHold).toBe(BigInt(promptBound * 60 + MAX_TOKENS * 15));
      const short = await admin.createAccount({ creditsUsd: usd(hourHold - 1n) });
      const err = await sdk(gw, short.key).chat.completions.create({ model: HOUR_DEAR.id, messages: MESSAGES, max_tokens: MAX_TOKENS }).catch((e) => e);
      expect(err).toMatchObject({ status: 402, code: 'insufficient_credits' });
      expect(err.message).toContain(`$${usd(hourHold)}`);
      expect(fake.requests).toHaveLength(0);

      // Exactly the hold: served, and a prompt that is all 1-hour cache writes, with the whole allowance, costs exactly the hold.
      const exact = await admin.createAccount({ creditsUsd: usd(hourHold) });
      fake.reply = { content: 'x', promptTokens: promptBound, completionTokens: MAX_TOKENS, usageDetails: { prompt: { cache_write_tokens: promptBound, cache_write_1h_tokens: promptBound } } };
      await sdk(gw, exact.key).chat.completions.create({ model: HOUR_DEAR.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
      expect(classCostMicros(HOUR_DEAR, { prompt: promptBound, completion: MAX_TOKENS, cacheWrite: promptBound, cacheWrite1h: promptBound })).toBe(hourHold);
      const money = await moneyOf(db, exact.accountId);
      expect(money).toMatchObject({ balance: 0n, reserved: 0n, ledgerSum: 0n, openHolds: 0 });
      expect(money.charges.map((c) => c.amount)).toEqual([hourHold]);
      const [row] = await waitForUsageRows(db, exact.accountId, 1);
      expect(row).toMatchObject({ cache_write_tokens: promptBound, cache_write_1h_tokens: promptBound, cost_micros: String(hourHold) });
    });

    it('never charges more than the hold, even when the upstream reports more than the prompt bound', async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      fake.reply = { content: 'x', promptTokens: promptBound + 100, completionTokens: MAX_TOKENS, usageDetails: { prompt: { audio_tokens: promptBound + 100 }, completion: { audio_tokens: MAX_TOKENS } } };
      await sdk(gw, key).chat.completions.create({ model: CLASSED.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
      const money = await moneyOf(db, accountId);
      expect(money.charges.map((c) => c.amount)).toEqual([hold()]);
      expect(money).toMatchObject({ balance: CREDITS - hold(), ledgerSum: CREDITS - hold(), reserved: 0n });
      const [row] = await waitForUsageRows(db, accountId, 1);
      expect(row).toMatchObject({ cost_micros: String(hold()), audio_input_tokens: promptBound + 100, audio_output_tokens: MAX_TOKENS });
    });
  });

  it('shows the class counts per key and per model through /v1/usage, the admin API and the CLI', async () => {
    const { accountId, key, keyId } = await admin.createAccount({ creditsUsd: '1' });
    const second = (await admin.request('POST', `/accounts/${accountId}/keys`, { name: 'second' })).body;
    const ask = (apiKey: string, model: string, usageDetails: Details) => {
      fake.reply = { ...fake.reply, usageDetails };
      return sdk(gw, apiKey).chat.completions.create({ model, messages: MESSAGES, max_tokens: MAX_TOKENS });
    };
    await ask(key, CLASSED.id, EACH_CLASS[0][1]); // 1,536 cached
    await ask(key, BASE_ONLY.id, ALL_CLASSES); // 1,024 cached, 256 cache write (96 for an hour), 300 audio in, 120 audio out, 64 reasoning
    await ask(second.key, CLASSED.id, EACH_CLASS.find(([name]) => name === 'audio output')![1]); // 250 audio out
    await waitForUsageRows(db, accountId, 3);
    await moneyOf(db, accountId);

    const none = { cached_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0, audio_input_tokens: 0, audio_output_tokens: 0, reasoning_tokens: 0 };
    const firstKey = {
      requests: 2,
      prompt_tokens: 2 * PROMPT,
      completion_tokens: 2 * COMPLETION,
      cached_tokens: 1536 + 1024,
      cache_write_tokens: 256,
      cache_write_1h_tokens: 96,
      audio_input_tokens: 300,
      audio_output_tokens: 120,
      reasoning_tokens: 64,
    };
    const secondKey = { requests: 1, prompt_tokens: PROMPT, completion_tokens: COMPLETION, ...none, audio_output_tokens: 250 };
    const classedModel = { requests: 2, prompt_tokens: 2 * PROMPT, completion_tokens: 2 * COMPLETION, ...none, cached_tokens: 1536, audio_output_tokens: 250 };
    const baseModel = { ...none, requests: 1, prompt_tokens: PROMPT, completion_tokens: COMPLETION, ...classColumns(ALL_EXPECTED) };
    const totals = { ...firstKey, requests: 3, prompt_tokens: 3 * PROMPT, completion_tokens: 3 * COMPLETION, audio_output_tokens: 370 };

    const expectClasses = (view: any) => {
      expect(view.totals).toMatchObject(totals);
      const byKey = Object.fromEntries(view.by_key.map((k: any) => [k.key_id, k]));
      expect(byKey[keyId]).toMatchObject(firstKey);
      expect(byKey[second.id]).toMatchObject(secondKey);
      const byModel = Object.fromEntries(view.by_model.map((m: any) => [m.model, m]));
      expect(byModel[CLASSED.id]).toMatchObject(classedModel);
      expect(byModel[BASE_ONLY.id]).toMatchObject(baseModel);
      expect(view.daily.at(-1)).toMatchObject(totals);
      expect(view.latest.map((r: any) => r.audio_output_tokens).sort()).toEqual([0, 120, 250]);
      const { requests: _requests, ...baseRequest } = baseModel;
      expect(view.latest.find((r: any) => r.model === BASE_ONLY.id)).toMatchObject(baseRequest);
    };
    // The admin API and the CLI first: the account's own /v1/usage request is a request of the account too.
    const byAdmin = await admin.usage(accountId);
    expectClasses(byAdmin);
    // The CLI prints the admin API's answer.
    const { stdout } = await run(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/cli/admin-cli.ts', 'usage', 'show', accountId], {
      cwd: join(__dirname, '..'),
      env: { ...process.env, GATEWAY_URL: gw.url, ADMIN_TOKEN: TEST_ADMIN_TOKEN },
    });
    expectClasses(JSON.parse(stdout));
    const own: any = await (await fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json();
    expectClasses(own);
    expect(own.by_key).toEqual(byAdmin.by_key);
  });
});

describe('token classes on a routed model: the second deployment serves and is charged by the same formula', () => {
  const ROUTED: RoutedModel = { ...CLASSED, id: 'classed-routed', failure_threshold: 1000, deployments: [{ upstream: 'a', model: 'tc-a' }, { upstream: 'b', model: 'tc-b', priority: 1 }] };
  const suite = useRoutingGateway([ROUTED]);

  it.each([false, true])('charges every class of the answer of b after a fails (streamed: %s)', async (stream) => {
    const { a, b, gw, admin, db } = suite;
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    a.failureByModel['tc-a'] = 'status500';
    b.reply = { content: 'Served by b.', promptTokens: PROMPT, completionTokens: COMPLETION, usageDetails: ALL_CLASSES };
    const client = sdk(gw, key);
    if (stream) {
      const chunks = await client.chat.completions.create({ model: ROUTED.id, messages: MESSAGES, max_tokens: MAX_TOKENS, stream: true, stream_options: { include_usage: true } });
      let usage: unknown;
      for await (const chunk of chunks) usage = chunk.usage ?? usage;
      expect(usage).toEqual({ ...b.usageBlock(COMPLETION), cost: expect.any(Number) });
    } else {
      const completion = await client.chat.completions.create({ model: ROUTED.id, messages: MESSAGES, max_tokens: MAX_TOKENS });
      expect(completion.usage).toEqual({ ...b.usageBlock(COMPLETION), cost: expect.any(Number) });
    }
    const cost = classCostMicros(ROUTED, ALL_EXPECTED);
    expect(cost).toBeLessThanOrEqual(holdMicros(ROUTED, MESSAGES, MAX_TOKENS));
    const money = await moneyOf(db, accountId);
    expect(money.charges.map((c) => c.amount)).toEqual([cost]);
    expect(money).toMatchObject({ balance: CREDITS - cost, ledgerSum: CREDITS - cost, reserved: 0n, openHolds: 0 });
    const [row] = await waitForUsageRows(db, accountId, 1);
    expect(row).toMatchObject({ ...classColumns(ALL_EXPECTED), cost_micros: String(cost), streamed: stream });
    expect(await deploymentColumns(db, accountId)).toEqual([{ deployment: 'b/tc-b', attempts: 2, cost_micros: String(cost), status: 200 }]);
  });
});

/** The `data:` payloads of an SSE answer, to its end. */
async function readAll(res: Response): Promise<string[]> {
  return parseSseData(await res.text());
}

interface Deltas {
  /** Content, tool-call names and arguments, in order. */
  text: string;
  /** Argument deltas seen. */
  pieces: number;
}

/** Reads a chat SSE answer until `done(deltas)`, collecting what its deltas produced. */
async function readDeltasUntil(res: Response, done: (deltas: Deltas) => boolean): Promise<Deltas> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const deltas: Deltas = { text: '', pieces: 0 };
  let buffer = '';
  while (!done(deltas)) {
    const { value, done: ended } = await reader.read();
    if (ended) throw new Error('the stream ended before the client hung up');
    buffer += decoder.decode(value, { stream: true });
    const complete = buffer.slice(0, buffer.lastIndexOf('\n\n') + 2);
    buffer = buffer.slice(complete.length);
    for (const data of parseSseData(complete)) {
      if (data === '[DONE]') continue;
      const delta = JSON.parse(data).choices[0]?.delta ?? {};
      if (typeof delta.content === 'string') deltas.text += delta.content;
      for (const call of delta.tool_calls ?? []) {
        deltas.text += (call.function?.name ?? '') + (call.function?.arguments ?? '');
        if (call.function?.arguments) deltas.pieces++;
      }
    }
  }
  return deltas;
}
