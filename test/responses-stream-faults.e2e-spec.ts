import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { costMicros, moneyOf, PricedModel, sdk, useFakeGateway, waitForUsageRows } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { expectValidStream, NamedEvent, parseNamedEvents, postResponses } from './support/responses-support';
import { TestApp } from './support/test-app';

const MODEL: PricedModel = { id: 'resp-faults', input: 2, output: 100, maxOutput: 4096 };
const WORDS = Array.from({ length: 40 }, (_, i) => `word${i}`);

describe('POST /v1/responses streams: upstream failure and client abort (issue 18)', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useFakeGateway([MODEL], { reply: { content: WORDS.join(' '), promptTokens: 9, completionTokens: WORDS.length } });
  beforeAll(() => ({ fake, gw, admin, db } = suite));

  it('ends a stream the upstream broke with an error event (chat\'s code) and response.failed, and charges nothing', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.failNext('midStreamFailure');
    const res = await postResponses(gw, key, { model: MODEL.id, input: 'Count.', stream: true });
    expect(res.status).toBe(200);
    const events = parseNamedEvents(await res.text());
    expectValidStream(events);
    expect(events.filter((e) => e.data.type === 'response.output_text.delta').length).toBeGreaterThan(0);
    const [error, failed] = events.slice(-2).map((e) => e.data);
    expect(error).toMatchObject({ type: 'error', code: 'upstream_error' });
    expect(failed).toMatchObject({ type: 'response.failed', response: { status: 'failed', error: { code: 'server_error', message: error.message } } });
    expect(events.some((e) => e.data.type === 'response.completed')).toBe(false);

    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, reserved: 0n, charges: [], openHolds: 0 });
    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ endpoint: '/v1/responses', streamed: true, error_code: 'upstream_error', cost_micros: '0' })]);
  });

  it('lets the openai SDK see the failure when it iterates the stream', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    fake.failNext('midStreamFailure');
    const seen: string[] = [];
    for await (const event of await sdk(gw, key).responses.create({ model: MODEL.id, input: 'Count.', stream: true })) seen.push(event.type);
    expect(seen.slice(-2)).toEqual(['error', 'response.failed']);
  });

  it('charges a client that hung up for the prompt and the tokens produced until then', async () => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.chunkDelayMs = 50;
    const abort = new AbortController();
    const res = await postResponses(gw, key, { model: MODEL.id, input: 'Count slowly.', stream: true }, { signal: abort.signal });
    expect(res.status).toBe(200);

    // Read until four words arrived, then hang up.
    const received: NamedEvent[] = [];
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    while (received.filter((e) => e.data.type === 'response.output_text.delta').length < 4) {
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended before the client hung up');
      buffer += decoder.decode(value, { stream: true });
      const complete = buffer.slice(0, buffer.lastIndexOf('\n\n') + 2);
      buffer = buffer.slice(complete.length);
      received.push(...parseNamedEvents(complete));
    }
    abort.abort();
    expectValidStream(received);

    await fake.waitFor(() => fake.aborted().length === 1);
    const [row] = await waitForUsageRows(db, accountId, 1);
    expect(row).toMatchObject({ endpoint: '/v1/responses', streamed: true });
    expect(row.status).not.toBe(200);
    // No usage chunk came: the gateway counted the prompt and what it relayed, as for chat.
    expect(row.prompt_tokens).toBeGreaterThan(0);
    expect(row.completion_tokens).toBeGreaterThanOrEqual(4);
    expect(row.completion_tokens).toBeLessThan(WORDS.length);
    const cost = costMicros(MODEL, row.prompt_tokens, row.completion_tokens);
    expect(row.cost_micros).toBe(String(cost));
    const money = await moneyOf(db, accountId);
    expect(money).toMatchObject({ balance: 1_000_000n - cost, reserved: 0n, ledgerSum: 1_000_000n - cost, openHolds: 0 });
    expect(money.charges).toEqual([{ amount: cost, requestId: row.request_id }]);
  });
});
