import { DataSource } from 'typeorm';
import OpenAI from 'openai';
import { AdminClient } from './support/admin-client';
import { expectOneCharge, moneyOf, PricedModel, sdk, usd, useFakeGateway } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';

// 2 and 100 micro-USD per token: whole micro-dollars, no rounding to hide a missing choice.
const MODEL: PricedModel = { id: 'choices-chat', input: 2, output: 100, maxOutput: 4096 };
const MESSAGES = [{ role: 'user' as const, content: 'Give me three ways to say hello.' }];
const REPLY = 'Grüß dich — こんにちは 👋';
const PROMPT = 17;
const PER_CHOICE = 6;
const N = 3;
const MAX_TOKENS = 50;
// OpenAI bills every choice: prompt × input + n × per-choice completion × output (docs/billing.md).
const COST = BigInt(PROMPT) * 2n + BigInt(N * PER_CHOICE) * 100n;
// The hold: the prompt bound (the messages' JSON bytes + 3) at the input price, and max_tokens for each of the n choices at the output price.
const HOLD = BigInt(Buffer.byteLength(JSON.stringify(MESSAGES)) + 3) * 2n + BigInt(N * MAX_TOKENS) * 100n;

describe('chat completions with n choices: every choice answered and charged', () => {
  let fake: FakeUpstream, admin: AdminClient, db: DataSource;
  let client: (key: string) => OpenAI;
  const suite = useFakeGateway([MODEL]);
  beforeAll(() => {
    ({ fake, admin, db } = suite);
    client = (key) => sdk(suite.gw, key);
  });
  beforeEach(() => {
    fake.resetState();
    fake.reply = { content: REPLY, promptTokens: PROMPT, completionTokens: PER_CHOICE };
  });

  const expectCharged = (accountId: string, credits: bigint, streamed: boolean) =>
    expectOneCharge(db, accountId, { cost: COST, credits, row: { model: MODEL.id, streamed, prompt_tokens: PROMPT, completion_tokens: N * PER_CHOICE } });

  it('answers n: 3 in JSON with three choices, and charges the completion tokens of all three', async () => {
    const credits = 1_000_000n;
    const { accountId, key } = await admin.createAccount({ creditsUsd: usd(credits) });
    const completion = await client(key).chat.completions.create({ model: MODEL.id, messages: MESSAGES, n: N, max_tokens: MAX_TOKENS });

    expect(completion.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([0, 1, 2].map((i) => [i, REPLY, 'stop']));
    expect(completion.usage).toMatchObject({ prompt_tokens: PROMPT, completion_tokens: N * PER_CHOICE, total_tokens: PROMPT + N * PER_CHOICE });
    expect(fake.requests.map((r) => r.body.n)).toEqual([N]);
    await expectCharged(accountId, credits, false);
  });

  it.each([
    ['with the usage chunk asked for', true],
    ['without it', false],
  ])('streams n: 3 (%s): every choice its deltas under its own index and its finish, and charges all three', async (_, includeUsage) => {
    const credits = 1_000_000n;
    const { accountId, key } = await admin.createAccount({ creditsUsd: usd(credits) });
    const stream = await client(key).chat.completions.create({
      model: MODEL.id,
      messages: MESSAGES,
      n: N,
      max_tokens: MAX_TOKENS,
      stream: true,
      ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
    });
    const text = new Map<number, string>();
    const finishes = new Map<number, string | null>();
    const usages: unknown[] = [];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text.set(choice.index, (text.get(choice.index) ?? '') + (choice.delta.content ?? ''));
        if (choice.finish_reason) finishes.set(choice.index, choice.finish_reason);
      }
      if (chunk.usage) usages.push(chunk.usage);
    }

    expect([...text.entries()].sort()).toEqual([0, 1, 2].map((i) => [i, REPLY]));
    expect([...finishes.entries()].sort()).toEqual([0, 1, 2].map((i) => [i, 'stop']));
    expect(usages).toEqual(includeUsage ? [expect.objectContaining({ prompt_tokens: PROMPT, completion_tokens: N * PER_CHOICE })] : []);
    // The gateway always asks the upstream for the usage it bills from.
    expect(fake.requests[0].body).toMatchObject({ n: N, stream: true, stream_options: { include_usage: true } });
    await expectCharged(accountId, credits, true);
  });

  it('holds max_tokens for each of the n choices: credits of exactly that hold pass, one micro-dollar less is 402 with no upstream call', async () => {
    const enough = await admin.createAccount({ creditsUsd: usd(HOLD) });
    const completion = await client(enough.key).chat.completions.create({ model: MODEL.id, messages: MESSAGES, n: N, max_tokens: MAX_TOKENS });
    expect(completion.choices).toHaveLength(N);
    await expectCharged(enough.accountId, HOLD, false);

    fake.resetState();
    const short = await admin.createAccount({ creditsUsd: usd(HOLD - 1n) });
    const err = await client(short.key)
      .chat.completions.create({ model: MODEL.id, messages: MESSAGES, n: N, max_tokens: MAX_TOKENS })
      .then(
        () => null,
        (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
      );
    expect(err).toMatchObject({ status: 402, code: 'insufficient_credits' });
    expect(fake.requests).toHaveLength(0);
    expect((await moneyOf(db, short.accountId)).charges).toEqual([]);
  });
});
