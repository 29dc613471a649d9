import { BadRequestError } from 'openai';
import { DataSource } from 'typeorm';
import { AdminClient } from './support/admin-client';
import { moneyOf, PricedModel, sdk, useFakeGateway, waitForUsageRows } from './support/chat-support';
import { FakeUpstream } from './support/fake-upstream';
import { postResponses } from './support/responses-support';
import { TestApp } from './support/test-app';

const MODEL: PricedModel = { id: 'resp-refusals', input: 3, output: 150, maxOutput: 4096 };

/** Each field that needs server state, or a platform the gateway lacks, and the `param` its 400 names. */
const UNSUPPORTED: [string, Record<string, unknown>, string][] = [
  ['previous_response_id', { previous_response_id: 'resp_123' }, 'previous_response_id'],
  ['conversation', { conversation: 'conv_123' }, 'conversation'],
  ['background: true', { background: true }, 'background'],
  ['prompt', { prompt: { id: 'pmpt_123' } }, 'prompt'],
  ['a built-in tool_choice', { tool_choice: { type: 'web_search_preview' } }, 'tool_choice'],
  ['a tool_choice forcing a withdrawn tool', { tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } }, 'tool_choice'],
  ['tool_choice required with every tool withdrawn', { tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }], tool_choice: 'required' }, 'tool_choice'],
  ['an item_reference input item', { input: [{ type: 'item_reference', id: 'msg_123' }] }, 'input[0].type'],
  ['an uploaded image (file_id)', { input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] }, 'input[0].content[0].file_id'],
  ['an input_file part', { input: [{ role: 'user', content: [{ type: 'input_file', file_data: 'x' }] }] }, 'input[0].content[0].type'],
];

/** Bodies that are wrong, not unsupported: 400 with chat's codes. */
const INVALID: [string, string, Record<string, unknown>, string][] = [
  ['no model', 'missing_model', { model: undefined }, 'model'],
  ['an unknown model', 'unknown_model', { model: 'no-such-model' }, 'model'],
  ['a speech model', 'model_not_hosted', { model: 'local-tts' }, 'model'],
  ['no input', 'invalid_request_error', { input: undefined }, 'input'],
  ['an empty input list', 'invalid_request_error', { input: [] }, 'input'],
  ['reasoning items only', 'invalid_request_error', { input: [{ type: 'reasoning', id: 'rs_1', summary: [] }] }, 'input'],
  ['a bad role', 'invalid_request_error', { input: [{ role: 'robot', content: 'x' }] }, 'input[0].role'],
  ['a function_call without call_id', 'invalid_request_error', { input: [{ type: 'function_call', name: 'f', arguments: '{}' }] }, 'input[0].call_id'],
  ['temperature 3', 'invalid_request_error', { temperature: 3 }, 'temperature'],
  ['max_output_tokens 0', 'invalid_request_error', { max_output_tokens: 0 }, 'max_output_tokens'],
  ['a function tool without a name', 'invalid_request_error', { tools: [{ type: 'function' }] }, 'tools[0].name'],
  ['an unknown text.format type', 'invalid_request_error', { text: { format: { type: 'xml' } } }, 'text.format.type'],
  ['json_schema without a schema', 'invalid_request_error', { text: { format: { type: 'json_schema', name: 'x' } } }, 'text.format.schema'],
  ['metadata with a number', 'invalid_request_error', { metadata: { n: 1 } }, 'metadata'],
];

describe('POST /v1/responses: refusals, validation and failures (issue 18)', () => {
  let fake: FakeUpstream, gw: TestApp, admin: AdminClient, db: DataSource;
  const suite = useFakeGateway([MODEL]);
  beforeAll(() => ({ fake, gw, admin, db } = suite));
  beforeEach(() => fake.resetState());

  it.each(UNSUPPORTED)('refuses %s with 400 unsupported_parameter, before any upstream call or hold', async (_name, fields, param) => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    const res = await postResponses(gw, key, { model: MODEL.id, input: 'Hello', ...fields });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as any;
    expect(error).toMatchObject({ code: 'unsupported_parameter', type: 'invalid_request_error', param });
    expect(fake.requests).toHaveLength(0);
    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ endpoint: '/v1/responses', status: 400, error_code: 'unsupported_parameter', cost_micros: '0' })]);
  });

  it('is reported by the openai SDK as a BadRequestError with code and param', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const err = await sdk(gw, key).responses.create({ model: MODEL.id, input: 'Hello', previous_response_id: 'resp_1' }).catch((e) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err).toMatchObject({ status: 400, code: 'unsupported_parameter', param: 'previous_response_id' });
  });

  it.each(INVALID)('answers %s with 400 %s', async (_name, code, fields, param) => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const res = await postResponses(gw, key, { model: MODEL.id, input: 'Hello', ...fields });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toMatchObject({ code, param });
    expect(fake.requests).toHaveLength(0);
  });

  it('accepts store: false, background: false, an empty include and truncation disabled', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '1' });
    const res = await postResponses(gw, key, { model: MODEL.id, input: 'Hello', store: false, background: false, include: [], truncation: 'disabled' });
    expect(res.status).toBe(200);
  });

  it('answers 402 insufficient_credits as chat does when the credits cannot pay', async () => {
    const { key } = await admin.createAccount({ creditsUsd: '0.000001' });
    const res = await postResponses(gw, key, { model: MODEL.id, input: 'Hello' });
    expect(res.status).toBe(402);
    const { error } = (await res.json()) as any;
    expect(error).toMatchObject({ code: 'insufficient_credits' });
    expect(error.message).toContain('held for at least 1 output token (no max_output_tokens was set: the answer would be cut to what is affordable)');
    expect(fake.requests).toHaveLength(0);
  });

  it('serves POST only: GET /v1/responses is 404 before authentication', async () => {
    const res = await fetch(`${gw.url}/v1/responses`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'not_found' });
  });

  it.each([false, true])('maps an upstream 500 to 502 upstream_error and charges nothing (stream: %s)', async (stream) => {
    const { accountId, key } = await admin.createAccount({ creditsUsd: '1' });
    fake.failNext('status500');
    const res = await postResponses(gw, key, { model: MODEL.id, input: 'Hello', stream });
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'upstream_error', type: 'api_error' });
    expect(await moneyOf(db, accountId)).toMatchObject({ balance: 1_000_000n, reserved: 0n, charges: [], openHolds: 0 });
    const rows = await waitForUsageRows(db, accountId, 1);
    expect(rows).toEqual([expect.objectContaining({ endpoint: '/v1/responses', status: 502, error_code: 'upstream_error', cost_micros: '0' })]);
  });
});
