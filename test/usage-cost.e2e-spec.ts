import { anthropic } from './support/messages-support';
import { moneyOf, postChat, postJson, PricedModel, readSseData, sdk, useFakeGateway } from './support/chat-support';
import { FakeReply } from './support/fake-upstream';

/**
 * The cost on every answer (issue 35 item 2, DESIGN.md section 11): `usage.cost` (USD) in JSON answers and in the
 * usage chunk or final event of streams, on chat, Responses and Messages, and `x-gateway-cost-usd` on JSON
 * answers: exactly the charge, i.e. the balance's fall, whatever the token classes.
 */
const MODEL: PricedModel = { id: 'cost-chat', input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75, cacheWrite1h: 6, audioInput: 40, audioOutput: 80, maxOutput: 2000 };
const CLASSED: FakeReply = {
  content: 'An answer with every class.',
  promptTokens: 3001,
  completionTokens: 77,
  usageDetails: { prompt: { cached_tokens: 1200, cache_write_tokens: 500, cache_write_1h_tokens: 120, audio_tokens: 33 }, completion: { reasoning_tokens: 20, audio_tokens: 7 } },
};

describe('usage.cost on every answer', () => {
  const suite = useFakeGateway([MODEL]);
  beforeEach(() => {
    suite.fake.resetState();
    suite.fake.reply = { ...CLASSED };
  });

  /** A fresh account, the request, and what the balance fell by. */
  async function charged(send: (key: string) => Promise<unknown>): Promise<{ result: any; micros: bigint }> {
    const { accountId, key } = await suite.admin.createAccount({ creditsUsd: '10' });
    const result = await send(key);
    const money = await moneyOf(suite.db, accountId);
    expect(money.charges).toHaveLength(1);
    expect(money.ledgerSum).toBe(money.balance);
    return { result, micros: 10_000_000n - money.balance };
  }
  const usd = (micros: bigint) => Number(micros) / 1e6;
  const text = (micros: bigint) => `${micros / 1_000_000n}.${String(micros % 1_000_000n).padStart(6, '0')}`;

  it('chat JSON: usage.cost and the header are the charge', async () => {
    const { result, micros } = await charged(async (key) => {
      const res = await postChat(suite.gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'hi' }] });
      return { header: res.headers.get('x-gateway-cost-usd'), body: await res.json() };
    });
    expect(micros).toBeGreaterThan(0n);
    expect(result.body.usage.cost).toBe(usd(micros));
    expect(result.header).toBe(text(micros));
  });

  it('chat stream: the usage chunk carries the cost', async () => {
    const { result, micros } = await charged(async (key) => {
      const res = await postChat(suite.gw, key, { model: MODEL.id, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
      expect(res.headers.get('x-gateway-cost-usd')).toBeNull();
      return readSseData(res);
    });
    const usage = (result as string[]).filter((d) => d !== '[DONE]').map((d) => JSON.parse(d).usage).filter(Boolean);
    expect(usage).toHaveLength(1);
    expect(usage[0].cost).toBe(usd(micros));
  });

  it('Responses, JSON and streamed: usage.cost in the response and in response.completed', async () => {
    const json = await charged(async (key) => {
      const res = await postJson(suite.gw, key, '/v1/responses', { model: MODEL.id, input: 'hi' });
      return { header: res.headers.get('x-gateway-cost-usd'), body: await res.json() };
    });
    expect(json.result.body.usage.cost).toBe(usd(json.micros));
    expect(json.result.header).toBe(text(json.micros));
    const streamed = await charged(async (key) => {
      let completed: any = null;
      for await (const event of await sdk(suite.gw, key).responses.create({ model: MODEL.id, input: 'hi', stream: true })) {
        if (event.type === 'response.completed') completed = event.response;
      }
      return completed;
    });
    expect(streamed.result.usage.cost).toBe(usd(streamed.micros));
    expect(streamed.micros).toBe(json.micros);
  });

  it('Messages, JSON and streamed: usage.cost in the message and in message_delta', async () => {
    const json = await charged(async (key) => {
      const { data, response } = await anthropic(suite.gw, key).messages.create({ model: MODEL.id, max_tokens: 500, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      return { header: response.headers.get('x-gateway-cost-usd'), body: data as any };
    });
    expect(json.result.body.usage.cost).toBe(usd(json.micros));
    expect(json.result.header).toBe(text(json.micros));
    const streamed = await charged(async (key) => {
      const res = await postJson(suite.gw, key, '/v1/messages', { model: MODEL.id, max_tokens: 500, stream: true, messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' } });
      return readSseData(res);
    });
    const delta = (streamed.result as string[]).map((d) => JSON.parse(d)).find((e) => e.type === 'message_delta');
    expect(delta.usage.cost).toBe(usd(streamed.micros));
  });

  it('shows no cost when the upstream reports no usage (the gateway counts after the answer), and charges all the same', async () => {
    suite.fake.reply = { content: 'no usage here', promptTokens: 0, completionTokens: 0, omitUsage: true };
    const { result, micros } = await charged(async (key) => {
      const res = await postChat(suite.gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'hi' }] });
      return { header: res.headers.get('x-gateway-cost-usd'), body: await res.json() };
    });
    expect(micros).toBeGreaterThan(0n);
    expect(result.header).toBeNull();
    expect(result.body.usage).toBeUndefined();
  });
});
