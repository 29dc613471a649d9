import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { costMicros, moneyOf, PricedModel, useFakeGateway } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { TestApp } from './support/test-app';

const MODEL: PricedModel = { id: 'resp-vercel', input: 2, output: 80, maxOutput: 4096 };

/** The Vercel AI SDK's default OpenAI provider (`openai('model')`, no `.chat`) calls POST /v1/responses. */
describe('the Vercel AI SDK against /v1/responses (issue 18)', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useFakeGateway([MODEL], { reply: { content: 'Hello from the fake upstream.', promptTokens: 14, completionTokens: 5 } });
  beforeAll(() => ({ fake, gw, admin, db } = suite));

  const modelFor = (key: string) => createOpenAI({ baseURL: `${gw.url}/v1`, apiKey: key })(MODEL.id);

  it('generateText returns the upstream\'s text and usage, billed as chat', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const result = await generateText({ model: modelFor(key), system: 'Be kind.', prompt: 'Say hello.', maxRetries: 0 });

    expect(result.text).toBe('Hello from the fake upstream.');
    expect(result.finishReason).toBe('stop');
    expect(result.usage).toMatchObject({ inputTokens: 14, outputTokens: 5, totalTokens: 19 });
    expect(fake.requests.map((r) => r.path)).toEqual(['/v1/chat/completions']);
    expect(fake.requests[0].body.messages).toEqual([
      { role: 'system', content: 'Be kind.' },
      { role: 'user', content: [{ type: 'text', text: 'Say hello.' }] },
    ]);
    const cost = costMicros(MODEL, 14, 5);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n - cost, reserved: 0n });
  });

  it('streamText streams the upstream\'s text and ends with its usage', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const errors: unknown[] = [];
    const result = streamText({ model: modelFor(key), prompt: 'Say hello.', maxRetries: 0, onError: ({ error }) => void errors.push(error) });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);

    expect(errors).toEqual([]);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('Hello from the fake upstream.');
    expect(await result.text).toBe('Hello from the fake upstream.');
    expect(await result.finishReason).toBe('stop');
    expect(await result.usage).toMatchObject({ inputTokens: 14, outputTokens: 5, totalTokens: 19 });
    expect(fake.requests[0].body).toMatchObject({ stream: true });
    const cost = costMicros(MODEL, 14, 5);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n - cost, reserved: 0n });
  });
});
