import { countTokens } from 'gpt-tokenizer';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { costMicros, moneyOf, parseSseData, postChat, PricedModel, readSseData, sdk, upstreamModelOf, waitForUsageRows, useFakeGateway } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { expectValidAgainst } from './support/openapi';
import { TestApp } from './support/test-app';

const MODEL: PricedModel = { id: 'stream-chat', input: 2, output: 100, maxOutput: 4096 };
const WORDS = Array.from({ length: 40 }, (_, i) => `word${i}`);

describe('chat streaming', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useFakeGateway([MODEL], { reply: { content: 'Thé quick brówn 狐 jumps🦊.', promptTokens: 9, completionTokens: 5 } });
  beforeAll(() => ({ fake, gw, admin, db } = suite));

  it('relays chunks that validate against CreateChatCompletionStreamResponse and ends with [DONE], without a usage chunk when not asked', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'Say it.' }], stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('cache-control')).toMatch(/no-cache/);
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    expect(res.headers.get('x-request-id')).toBeTruthy();

    const data = await readSseData(res);
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    for (const chunk of chunks) expectValidAgainst('CreateChatCompletionStreamResponse', chunk);
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('Thé quick brówn 狐 jumps🦊.');
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
    // Not asked: no usage chunk (choices: []) and no usage figures anywhere.
    expect(chunks.every((c) => c.choices.length > 0 && !('usage' in c))).toBe(true);

    // The upstream is always asked for usage, with the catalog's upstream model.
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].body).toMatchObject({ model: upstreamModelOf(MODEL), stream: true, stream_options: { include_usage: true } });

    // Billed from the upstream's usage chunk although the client never saw it.
    const cost = costMicros(MODEL, 9, 5);
    const money = await moneyOf(db, accountId);
    expect(money).toMatchObject({ balance: 1_000_000n - cost, reserved: 0n, ledgerSum: 1_000_000n - cost });
    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ status: 200, streamed: true, prompt_tokens: 9, completion_tokens: 5, cost_micros: String(cost) })]);
  });

  it('keeps the upstream connection for the next request once a stream has ended', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const stream = () => postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'Say it.' }], stream: true }).then(readSseData);
    expect((await stream()).at(-1)).toBe('[DONE]');
    const before = fake.connectionsOpened;
    for (let i = 0; i < 3; i++) expect((await stream()).at(-1)).toBe('[DONE]');
    expect(fake.requests).toHaveLength(4);
    expect(fake.connectionsOpened - before).toBe(0);
  });

  it('forwards the usage chunk (choices: []) last when the client asked for it', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const stream = await sdk(gw, key).chat.completions.create({
      model: MODEL.id,
      messages: [{ role: 'user', content: 'Say it.' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: any[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    for (const chunk of chunks) expectValidAgainst('CreateChatCompletionStreamResponse', chunk);
    const withUsage = chunks.filter((c) => c.usage);
    expect(withUsage).toHaveLength(1);
    expect(chunks.at(-1)).toBe(withUsage[0]);
    expect(withUsage[0]).toMatchObject({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 } });
    expect(fake.requests[0].body.stream_options).toEqual({ include_usage: true });
  });

  it('ends the stream with an error event and charges nothing when the upstream fails mid-stream', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply = { content: WORDS.join(' '), promptTokens: 9, completionTokens: WORDS.length };
    fake.failNext('midStreamFailure');
    const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'Go.' }], stream: true });
    expect(res.status).toBe(200);
    const data = await readSseData(res);
    expect(data).not.toContain('[DONE]');
    const last = JSON.parse(data.at(-1)!);
    expect(last).toEqual({ error: expect.objectContaining({ code: 'upstream_error', type: 'api_error', message: expect.any(String) }) });
    const relayed = data.slice(0, -1).map((d) => JSON.parse(d));
    expect(relayed.length).toBeGreaterThan(0);
    for (const chunk of relayed) expectValidAgainst('CreateChatCompletionStreamResponse', chunk);

    const money = await moneyOf(db, accountId);
    expect(money).toMatchObject({ balance: 1_000_000n, reserved: 0n, ledgerSum: 1_000_000n, charges: [], openHolds: 0 });
    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ streamed: true, error_code: 'upstream_error', cost_micros: '0' })]);
  });

  it('is reported by the openai SDK as an error when the upstream fails mid-stream', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply = { content: WORDS.join(' '), promptTokens: 9, completionTokens: WORDS.length };
    fake.failNext('midStreamFailure');
    const stream = await sdk(gw, key).chat.completions.create({ model: MODEL.id, messages: [{ role: 'user', content: 'Go.' }], stream: true });
    const err = await (async () => {
      for await (const _ of stream) {
        // read until it fails
      }
    })().catch((e) => e);
    expect(err).toBeDefined();
    expect(String(err.message)).toMatch(/model service failed|upstream/i);
  });

  it('aborts the upstream request when the client disconnects, and charges the prompt and the tokens produced until then', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply = { content: WORDS.join(' '), promptTokens: 9, completionTokens: WORDS.length };
    fake.chunkDelayMs = 50;
    const messages = [{ role: 'user', content: 'Count slowly.' }];
    const abort = new AbortController();
    const res = await postChat(gw, key, { model: MODEL.id, messages, stream: true }, { signal: abort.signal });
    expect(res.status).toBe(200);

    // Read until four words arrived, then hang up.
    let received = '';
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    while ((received.match(/word/g) ?? []).length < 4) {
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended before the client hung up');
      buffer += decoder.decode(value, { stream: true });
      const complete = buffer.slice(0, buffer.lastIndexOf('\n\n') + 2);
      buffer = buffer.slice(complete.length);
      for (const d of parseSseData(complete)) received += JSON.parse(d).choices[0]?.delta?.content ?? '';
    }
    abort.abort();

    await fake.waitFor(() => fake.aborted().length === 1);
    expect(fake.requests[0].finished).toBe(false);

    const [row] = await waitForUsageRows(db, accountId, 1);
    expect(row.streamed).toBe(true);
    expect(row.status).not.toBe(200);
    // The upstream's usage chunk never came: the gateway counts what it saw.
    // OpenAI's chat accounting (3 tokens per message + 3 for the reply priming) with the o200k tokenizer.
    expect(row.prompt_tokens).toBe(3 + 3 + countTokens('user') + countTokens('Count slowly.'));
    expect(row.completion_tokens).toBeGreaterThanOrEqual(countTokens(received));
    expect(row.completion_tokens).toBeLessThan(countTokens(WORDS.join(' ')));
    const cost = costMicros(MODEL, row.prompt_tokens, row.completion_tokens);
    expect(row.cost_micros).toBe(String(cost));
    const money = await moneyOf(db, accountId);
    expect(money).toMatchObject({ balance: 1_000_000n - cost, reserved: 0n, ledgerSum: 1_000_000n - cost, openHolds: 0 });
    expect(money.charges).toEqual([{ amount: cost, requestId: row.request_id }]);
  });

  it('maps a failure before the first byte to an HTTP error, not an SSE stream', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.failNext('status500');
    const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'x' }], stream: true });
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'upstream_error' });
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, reserved: 0n, charges: [] });
  });

  it('passes a slow stream through chunk by chunk as it arrives', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply = { content: 'one two three four five', promptTokens: 3, completionTokens: 5 };
    fake.chunkDelayMs = 150;
    const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'x' }], stream: true });
    const reader = res.body!.getReader();
    const arrivals: number[] = [];
    const start = Date.now();
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
      arrivals.push(Date.now() - start);
    }
    // The first words arrive long before the upstream finished (7 events × 150 ms).
    expect(arrivals[0]).toBeLessThan(400);
    expect(arrivals.at(-1)! - arrivals[0]).toBeGreaterThan(500);
  });
});
