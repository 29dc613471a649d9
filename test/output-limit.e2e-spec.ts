import OpenAI from 'openai';
import { AdminClient } from './support/admin-client';
import { costMicros, moneyOf, PricedModel, sdk, upstreamModelOf, useFakeGateway, useGatewayWithFake, waitForUsageRows, withFakeProvider } from './support/chat-support';
import { FakeUpstream, REASONING_MAX_TOKENS_ERROR } from './support/fake-upstream';
import { anthropic } from './support/messages-support';
import { TestApp } from './support/test-app';
import { DataSource } from 'typeorm';

/** A reasoning model behind the fake: OpenAI refuses `max_tokens` for it (o-series, GPT-5 family). */
const REASONING: PricedModel = { id: 'o-fake', input: 2, output: 8, maxOutput: 100_000 };
const hi = [{ role: 'user' as const, content: 'Say it.' }];

/** What reached the upstream of the request, as far as its output limit goes. */
function limitFields(body: Record<string, unknown>): Record<string, unknown> {
  return { max_tokens: body.max_tokens, max_completion_tokens: body.max_completion_tokens };
}

describe('output limits in the field the upstream takes (issue 31)', () => {
  describe("against an OpenAI reasoning model, which refuses max_tokens (the provider's default: max_completion_tokens)", () => {
    let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
    const suite = useFakeGateway([REASONING]);
    beforeAll(() => ({ fake, gw, admin, db } = suite));
    beforeEach(() => {
      fake.resetState();
      fake.reasoningModels.add(upstreamModelOf(REASONING));
      fake.reply = { content: 'The quick brown fox jumps.', promptTokens: 11, completionTokens: 5 };
    });

    it('the fake is as strict as OpenAI: max_tokens straight to it is refused with OpenAI\'s own body', async () => {
      const res = await fetch(`${fake.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${fake.apiKey}` },
        body: JSON.stringify({ model: upstreamModelOf(REASONING), messages: hi, max_tokens: 10 }),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual(REASONING_MAX_TOKENS_ERROR);
    });

    it('a chat request capped to what the credits afford succeeds: the cap goes as max_completion_tokens, and is charged', async () => {
      // 1,000 µUSD: the prompt bound at 2 µUSD a token, the rest at 8 a token: far below the model's 100,000.
      const { accountId, key } = await admin.createAccount({ creditsUsd: '0.001' });
      const res = await sdk(gw, key).chat.completions.create({ model: REASONING.id, messages: hi });
      expect(res.choices[0].message.content).toBe('The quick brown fox jumps.');
      const sent = fake.requests[0].body;
      expect(limitFields(sent)).toEqual({ max_tokens: undefined, max_completion_tokens: expect.any(Number) });
      expect(sent.max_completion_tokens).toBeLessThan(125);
      await waitForUsageRows(db, accountId, 1);
      expect((await moneyOf(db, accountId)).charges.map((c) => c.amount)).toEqual([costMicros(REASONING, 11, 5)]);
    });

    it("a chat request's own max_tokens goes as the client sent it, and OpenAI's refusal comes back as it would from OpenAI (400), uncharged", async () => {
      const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
      const err = await sdk(gw, key)
        .chat.completions.create({ model: REASONING.id, messages: hi, max_tokens: 50 })
        .catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err).toMatchObject({ status: 400, code: 'upstream_rejected' });
      expect(err.message).toContain("Use 'max_completion_tokens' instead.");
      expect((await moneyOf(db, accountId)).charges).toEqual([]);
      // The field the model takes is served.
      await sdk(gw, key).chat.completions.create({ model: REASONING.id, messages: hi, max_completion_tokens: 50 });
      expect(limitFields(fake.requests[1].body)).toEqual({ max_tokens: undefined, max_completion_tokens: 50 });
    });

    it('the Responses API with max_output_tokens succeeds, JSON and streamed: the limit goes as max_completion_tokens', async () => {
      const { key } = await admin.createAccount({ creditsUsd: '1' });
      const response = await sdk(gw, key).responses.create({ model: REASONING.id, input: 'Say it.', max_output_tokens: 3 });
      expect(response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
      expect(response.output_text).toBe('The quick brown');
      const stream = await sdk(gw, key).responses.create({ model: REASONING.id, input: 'Say it.', max_output_tokens: 64, stream: true });
      let completed: unknown;
      for await (const event of stream) if (event.type === 'response.completed') completed = event.response;
      expect(completed).toMatchObject({ status: 'completed', usage: { output_tokens: 5 } });
      expect(fake.requests.map((r) => limitFields(r.body))).toEqual([
        { max_tokens: undefined, max_completion_tokens: 3 },
        { max_tokens: undefined, max_completion_tokens: 64 },
      ]);
    });

    it("the Messages API (whose max_tokens is required) succeeds, JSON and streamed, through Anthropic's SDK", async () => {
      const { key } = await admin.createAccount({ creditsUsd: '1' });
      const message = await anthropic(gw, key).messages.create({ model: REASONING.id, max_tokens: 100, messages: hi });
      expect(message).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'The quick brown fox jumps.' }] });
      const streamed = await anthropic(gw, key).messages.stream({ model: REASONING.id, max_tokens: 200, messages: hi }).finalMessage();
      expect(streamed).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'The quick brown fox jumps.' }] });
      expect(fake.requests.map((r) => limitFields(r.body))).toEqual([
        { max_tokens: undefined, max_completion_tokens: 100 },
        { max_tokens: undefined, max_completion_tokens: 200 },
      ]);
    });
  });

  describe('a server that knows only max_tokens (provider output_limit_field: max_tokens)', () => {
    let fake: FakeUpstream, gw: TestApp, admin: AdminClient;
    const suite = useGatewayWithFake((url) => (raw) => {
      withFakeProvider(url, [REASONING])(raw);
      raw.providers.fake.output_limit_field = 'max_tokens';
    });
    beforeAll(() => ({ fake, gw, admin } = suite));
    beforeEach(() => {
      fake.resetState();
      fake.reply = { content: 'The quick brown fox jumps.', promptTokens: 11, completionTokens: 5 };
    });

    it("every limit goes as max_tokens: the client's max_completion_tokens, the gateway's cap, the Responses and Messages limits", async () => {
      const poor = await admin.createAccount({ creditsUsd: '0.001' });
      const { key } = await admin.createAccount({ creditsUsd: '1' });
      await sdk(gw, key).chat.completions.create({ model: REASONING.id, messages: hi, max_completion_tokens: 40 });
      await sdk(gw, key).chat.completions.create({ model: REASONING.id, messages: hi, max_tokens: 30, max_completion_tokens: 20 });
      await sdk(gw, poor.key).chat.completions.create({ model: REASONING.id, messages: hi });
      await sdk(gw, key).responses.create({ model: REASONING.id, input: 'Say it.', max_output_tokens: 64 });
      await anthropic(gw, key).messages.create({ model: REASONING.id, max_tokens: 100, messages: hi });
      await sdk(gw, key).chat.completions.create({ model: REASONING.id, messages: hi });
      const sent = fake.requests.map((r) => limitFields(r.body));
      // The held limit (max_completion_tokens when both are sent) is the one that goes.
      expect(sent.slice(0, 2)).toEqual([
        { max_tokens: 40, max_completion_tokens: undefined },
        { max_tokens: 20, max_completion_tokens: undefined },
      ]);
      expect(sent[2]).toEqual({ max_tokens: expect.any(Number), max_completion_tokens: undefined });
      expect(sent.slice(3)).toEqual([
        { max_tokens: 64, max_completion_tokens: undefined },
        { max_tokens: 100, max_completion_tokens: undefined },
        // No limit from the client and none from the gateway: none sent.
        { max_tokens: undefined, max_completion_tokens: undefined },
      ]);
    });
  });
});
