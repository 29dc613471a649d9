import { countTokens, decode, encode } from 'gpt-tokenizer';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { costMicros, moneyOf, postChat, readSseData, sdk, waitForUsageRows, useGateway } from './support/chat-support';
import { expectValidAgainst } from './support/openapi';
import { TestApp } from './support/test-app';

// config/gateway.yaml: dev-echo at $0.50 / $1.50 per million tokens.
const DEV_ECHO = { input: 0.5, output: 1.5 };
const TEXT = 'The embedded default answers chat offline, word by word.';
const MESSAGES = [
  { role: 'system' as const, content: 'You are an echo.' },
  { role: 'user' as const, content: TEXT },
];
// OpenAI's chat accounting: 3 tokens per message, 3 to prime the reply (o200k_base tokenizer).
const PROMPT_TOKENS = 3 + MESSAGES.reduce((n, m) => n + 3 + countTokens(m.role) + countTokens(m.content), 0);

describe('dev-echo (local provider, default config)', () => {
  let gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useGateway();
  beforeAll(() => ({ gw, admin, db } = suite));

  it('echoes the last user message with real token counts, and is charged for them', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const completion = await sdk(gw, key).chat.completions.create({ model: 'dev-echo', messages: MESSAGES });
    expectValidAgainst('CreateChatCompletionResponse', completion);
    expect(completion.choices[0]).toMatchObject({ message: { role: 'assistant', content: TEXT }, finish_reason: 'stop' });
    const usage = { prompt_tokens: PROMPT_TOKENS, completion_tokens: countTokens(TEXT), total_tokens: PROMPT_TOKENS + countTokens(TEXT) };
    expect(completion.usage).toMatchObject(usage);

    const cost = costMicros(DEV_ECHO, usage.prompt_tokens, usage.completion_tokens);
    const money = await moneyOf(db, accountId);
    expect(money).toMatchObject({ balance: 1_000_000n - cost, reserved: 0n, ledgerSum: 1_000_000n - cost });
    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ model: 'dev-echo', status: 200, prompt_tokens: PROMPT_TOKENS, completion_tokens: usage.completion_tokens })]);
  });

  it('is deterministic', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const client = sdk(gw, key);
    const [a, b] = await Promise.all([0, 1].map(() => client.chat.completions.create({ model: 'dev-echo', messages: MESSAGES })));
    expect(a.choices[0].message).toEqual(b.choices[0].message);
    expect(a.usage).toEqual(b.usage);
  });

  it('honours max_tokens: the reply is cut to that many tokens with finish_reason "length"', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const completion = await sdk(gw, key).chat.completions.create({ model: 'dev-echo', messages: MESSAGES, max_tokens: 4 });
    expect(completion.choices[0].finish_reason).toBe('length');
    expect(completion.choices[0].message.content).toBe(decode(encode(TEXT).slice(0, 4)));
    expect(completion.usage?.completion_tokens).toBe(4);
  });

  it('streams word by word: valid chunks, the usage chunk when asked, then [DONE]', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const res = await postChat(gw, key, { model: 'dev-echo', messages: MESSAGES, stream: true, stream_options: { include_usage: true } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const data = await readSseData(res);
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    for (const chunk of chunks) expectValidAgainst('CreateChatCompletionStreamResponse', chunk);

    const pieces = chunks.map((c) => c.choices[0]?.delta?.content).filter((p) => p);
    expect(pieces.join('')).toBe(TEXT);
    expect(pieces.length).toBe(TEXT.split(' ').length);
    const usageChunk = chunks.at(-1);
    expect(usageChunk).toMatchObject({ choices: [], usage: { prompt_tokens: PROMPT_TOKENS, completion_tokens: countTokens(TEXT) } });
    expect(chunks.slice(0, -1).every((c) => c.usage == null)).toBe(true);

    const cost = costMicros(DEV_ECHO, PROMPT_TOKENS, countTokens(TEXT));
    expect((await moneyOf(db, accountId)).balance).toBe(1_000_000n - cost);
    expect(await waitForUsageRows(db, accountId, 1)).toEqual([expect.objectContaining({ streamed: true, cost_micros: String(cost) })]);
  });

  it('streams through the openai SDK without a usage chunk when none was asked for', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const stream = await sdk(gw, key).chat.completions.create({ model: 'dev-echo', messages: MESSAGES, stream: true });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      expect(chunk.usage ?? null).toBeNull();
      expect(chunk.choices).toHaveLength(1);
      text += chunk.choices[0].delta.content ?? '';
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    expect(text).toBe(TEXT);
    expect(finish).toBe('stop');
  });

  it('answers 402 insufficient_credits to an account without credits', async () => {
    const { key } = await admin.createAccount();
    const err = await sdk(gw, key)
      .chat.completions.create({ model: 'dev-echo', messages: MESSAGES })
      .catch((e) => e);
    expect(err).toMatchObject({ status: 402, code: 'insufficient_credits' });
  });
});
