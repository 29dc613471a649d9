import OpenAI from 'openai';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { moneyOf, postChat, PricedModel, sdk, upstreamModelOf, waitForUsageRows, useFakeGateway } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { expectValidAgainst } from './support/openapi';
import { TestApp } from './support/test-app';

const MODEL: PricedModel = { id: 'acme/chat-large', input: 2, output: 100, maxOutput: 4096 };
const messages = [{ role: 'user', content: 'hi' }];

describe('chat request validation and pass-through', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useFakeGateway([MODEL]);
  beforeAll(() => ({ fake, gw, admin, db } = suite));
  beforeEach(() => fake.resetState());

  const invalid: [string, unknown, string, string | null][] = [
    ['unparseable JSON', '{"model": "acme/chat-large", "messages": [', 'invalid_json', null],
    ['no model', { messages }, 'missing_model', 'model'],
    ['an empty model', { model: '', messages }, 'missing_model', 'model'],
    ['a model not in the catalog', { model: 'gpt-5-ultra', messages }, 'unknown_model', 'model'],
    ['a speech model', { model: 'local-tts', messages }, 'model_not_hosted', 'model'],
    ['a transcription model', { model: 'local-stt', messages }, 'model_not_hosted', 'model'],
    ['no messages', { model: MODEL.id }, 'invalid_request_error', 'messages'],
    ['messages that are not an array', { model: MODEL.id, messages: 'hi' }, 'invalid_request_error', 'messages'],
    ['an empty messages array', { model: MODEL.id, messages: [] }, 'invalid_request_error', 'messages'],
    ['a message without role', { model: MODEL.id, messages: [{ content: 'hi' }] }, 'invalid_request_error', null],
    ['a model that is not a string', { model: 42, messages }, 'invalid_request_error', 'model'],
    ['stream that is not a boolean', { model: MODEL.id, messages, stream: 'yes' }, 'invalid_request_error', 'stream'],
    ['max_tokens that is not an integer', { model: MODEL.id, messages, max_tokens: 'ten' }, 'invalid_request_error', 'max_tokens'],
    ['a negative max_tokens', { model: MODEL.id, messages, max_tokens: -1 }, 'invalid_request_error', 'max_tokens'],
    ['a JSON array body', [{ model: MODEL.id, messages }], 'invalid_request_error', null],
    ['a JSON string body', '"hello"', 'invalid_request_error', null],
  ];

  it.each(invalid)('answers 400 for %s, without an upstream call or a charge, and records it', async (_, body, code, param) => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const res = await postChat(gw, key, body);
    expect(res.status).toBe(400);
    const payload: any = await res.json();
    expect(payload.error).toMatchObject({ code, type: 'invalid_request_error', message: expect.any(String) });
    if (param) expect(payload.error.param).toBe(param);
    expect(fake.requests).toHaveLength(0);
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, reserved: 0n, charges: [], openHolds: 0 });
    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ status: 400, error_code: code, cost_micros: '0' })]);
    // The usage view shows the model as requested, also when it was refused.
    const requested = body && typeof body === 'object' && !Array.isArray(body) ? (body as { model?: unknown }).model : undefined;
    const [record] = await db.query(`SELECT model FROM usage_records WHERE account_id = $1`, [accountId]);
    expect(record.model).toBe(typeof requested === 'string' ? requested : null);
  });

  it('is seen by the openai SDK as a BadRequestError with the code', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const err = await sdk(gw, key)
      .chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(err).toMatchObject({ status: 400, code: 'unknown_model', type: 'invalid_request_error' });
  });

  it("passes standard parameters and unknown fields through untouched, mapping only the model; OpenAI's 400 for the unknown ones reaches the client", async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const params = {
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Hello' }], name: 'alice' },
      ],
      max_tokens: 321,
      temperature: 0.7,
      top_p: 0.9,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      stop: ['\n\n', 'END'],
      seed: 1234,
      logit_bias: { '50256': -100 },
      logprobs: true,
      top_logprobs: 2,
      user: 'user-42',
      response_format: { type: 'json_object' },
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      metadata: { trace: 'abc' },
      // Fields no schema knows: an upstream may understand them (vLLM, OpenRouter, ...).
      repetition_penalty: 1.1,
      x_vendor_options: { nested: [1, { deep: true }], nothing: null },
    };
    // The fake is as strict as OpenAI, which knows no `repetition_penalty`: its 400 is relayed as upstream_rejected.
    const refused = await sdk(gw, key)
      .chat.completions.create({ model: MODEL.id, ...(params as any) })
      .catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(refused).toMatchObject({ status: 400, error: { code: 'upstream_rejected', message: expect.stringContaining('Unrecognized request argument supplied: repetition_penalty') } });
    expect(fake.requests).toHaveLength(1);
    const received = fake.requests[0].body;
    expect(received.model).toBe(upstreamModelOf(MODEL));
    const { model: _model, ...rest } = received;
    expect(rest).toEqual(params);
  });

  it('passes max_completion_tokens through untouched', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    await sdk(gw, key).chat.completions.create({ model: MODEL.id, messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 77 });
    expect(fake.requests[0].body.max_completion_tokens).toBe(77);
    expect(fake.requests[0].body.max_tokens).toBeUndefined();
  });

  it('answers the OpenAI chat.completion object, which validates against CreateChatCompletionResponse', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    fake.reply = { content: 'Hello there, friend.', promptTokens: 11, completionTokens: 4 };
    const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    const body: any = await res.json();
    expectValidAgainst('CreateChatCompletionResponse', body);
    expect(body).toMatchObject({
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there, friend.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 },
    });
  });

  it('answers the same object to the openai SDK', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const completion = await sdk(gw, key).chat.completions.create({ model: MODEL.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    expectValidAgainst('CreateChatCompletionResponse', completion);
    expect(completion.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: 'Hello from' } });
    expect(completion.usage?.completion_tokens).toBe(2);
  });
});
