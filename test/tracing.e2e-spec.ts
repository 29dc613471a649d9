import { trace } from '@opentelemetry/api';
import { randomBytes } from 'node:crypto';
import { AdminClient } from './support/admin-client';
import { chatCatalogEntry, costMicros, PricedModel, postChat, postJson, withFakeProvider } from './support/chat-support';
import { FakeBedrock, startFakeBedrock } from './support/fake-bedrock';
import { FakeUpstream, startFakeUpstream } from './support/fake-upstream';
import { sleep } from './support/fake-server';
import { OtlpReceiver, ReceivedSpan, startOtlpReceiver } from './support/otlp-receiver';
import { startOwnGateway } from './support/own-gateway';
import { RawConfig, startTestApp } from './support/test-app';

/** OTLP's span kinds and status codes. */
const SERVER = 2;
const CLIENT = 3;
const STATUS_ERROR = 2;

const MODEL: PricedModel = { id: 'traced-model', input: 2, output: 8, maxOutput: 100 };
const BEDROCK_MODEL: PricedModel = { id: 'traced-bedrock', input: 3, output: 15, maxOutput: 100 };
const BEDROCK_KEY_ID_ENV = 'TRACING_TEST_BEDROCK_KEY_ID';
const BEDROCK_SECRET_ENV = 'TRACING_TEST_BEDROCK_SECRET';
const PROMPT = 'A prompt that must not leave the gateway unless asked.';
const CONTENT_VARIABLE = 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT';

interface TracedSuite {
  receiver: OtlpReceiver;
  fake: FakeUpstream;
  bedrock: FakeBedrock;
  gw: { url: string };
  accountId: string;
  keyId: string;
  key: string;
}

/** MODEL served by the fake through two deployments (the router retries a failed attempt on the other), BEDROCK_MODEL by the fake Bedrock. */
function servedByFakes(fake: FakeUpstream, bedrock: FakeBedrock) {
  return (raw: RawConfig) => {
    const aws = { type: 'bedrock', region: bedrock.region, base_url: bedrock.url, access_key_id_env: BEDROCK_KEY_ID_ENV, secret_access_key_env: BEDROCK_SECRET_ENV };
    raw.providers.aws = { ...aws, timeouts: { connect_ms: 1000, request_ms: 10_000 } };
    raw.catalog.push(chatCatalogEntry(BEDROCK_MODEL, { provider: 'aws', upstream_model: 'anthropic.claude-sonnet-4-5-20250929-v1:0' }));
    withFakeProvider(fake.url, [], { name: 'primary' })(raw);
    raw.catalog.push(
      chatCatalogEntry(MODEL, {
        deployments: [
          { provider: 'primary', upstream_model: 'upstream-one' },
          { provider: 'primary', upstream_model: 'upstream-two' },
        ],
        retries: 1,
      }),
    );
  };
}

/**
 * A fake upstream, a real OTLP/HTTP receiver, and a gateway serving MODEL: with `otelEnv` (`{receiver}` replaced by
 * the receiver's URL), src/main.ts in a process of its own, started as an operator would; without, in this process
 * (so that the test sees OpenTelemetry's globals).
 */
function useTracedGateway(otelEnv: Record<string, string> | null): TracedSuite {
  const suite = {} as TracedSuite;
  let stop: () => Promise<void> = async () => undefined;
  beforeAll(async () => {
    suite.receiver = await startOtlpReceiver();
    suite.fake = await startFakeUpstream();
    suite.bedrock = await startFakeBedrock();
    const credentials = { [BEDROCK_KEY_ID_ENV]: suite.bedrock.accessKeyId, [BEDROCK_SECRET_ENV]: suite.bedrock.secretAccessKey };
    const config = servedByFakes(suite.fake, suite.bedrock);
    if (otelEnv) {
      const env = Object.fromEntries(Object.entries(otelEnv).map(([name, value]) => [name, value.replace('{receiver}', suite.receiver.url)]));
      const own = await startOwnGateway({ config, env: { ...env, ...credentials } });
      suite.gw = own;
      stop = () => own.stop();
    } else {
      Object.assign(process.env, credentials);
      // Off as an operator's environment without the variables (whatever the test run's own environment says).
      const saved = { endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT, traces: process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT };
      delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
      const app = await startTestApp({ config }).finally(() => {
        if (saved.endpoint !== undefined) process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved.endpoint;
        if (saved.traces !== undefined) process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = saved.traces;
      });
      suite.gw = app;
      stop = () => app.close();
    }
    ({ accountId: suite.accountId, keyId: suite.keyId, key: suite.key } = await new AdminClient(suite.gw.url).createAccount({ creditsUsd: 10 }));
  });
  beforeEach(() => {
    suite.fake?.resetState();
    suite.bedrock?.resetState();
  });
  afterAll(async () => {
    await stop();
    await suite.fake?.close();
    await suite.bedrock?.close();
    await suite.receiver?.close();
  });
  return suite;
}

/** A client's W3C trace context: a fresh trace id and the client's own span id. */
function clientTraceparent(): { traceId: string; parentId: string; header: string } {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, header: `00-${traceId}-${parentId}-01` };
}

/** The server span and the client spans of one request, once the server span and `clients` client spans arrived. */
async function spansOf(receiver: OtlpReceiver, traceId: string, clients: number) {
  const spans = await receiver.waitForTrace(traceId, (s) => s.some((x) => x.kind === SERVER) && s.filter((x) => x.kind === CLIENT).length >= clients);
  const server = spans.find((s) => s.kind === SERVER)!;
  const attempts = spans.filter((s) => s.kind === CLIENT).sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
  return { server, attempts };
}

function anyAttributeMentions(spans: ReceivedSpan[], text: string): boolean {
  return spans.some((s) => Object.values(s.attributes).some((v) => typeof v === 'string' && v.includes(text)));
}

describe('Traces (DESIGN.md section 12.4)', () => {
  describe('with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
    const suite = useTracedGateway({ OTEL_EXPORTER_OTLP_ENDPOINT: '{receiver}', OTEL_BSP_SCHEDULE_DELAY: '50' });

    it('exports a retried chat request as a server span in the client trace, with one client span per attempt and the traceparent sent upstream', async () => {
      const { fake, receiver, gw, key } = suite;
      fake.failNext('status500');
      const client = clientTraceparent();
      const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: PROMPT }] }, { headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: client.header, tracestate: 'client=1' } });
      expect(res.status).toBe(200);
      const answer = (await res.json()) as { id: string };
      const requestId = res.headers.get('x-request-id');

      const { server, attempts } = await spansOf(receiver, client.traceId, 2);
      // The server span continues the client's trace, as the child of the client's span.
      expect(server.parentSpanId).toBe(client.parentId);
      expect(server.name).toBe(`chat ${MODEL.id}`);
      expect(server.status.code).not.toBe(STATUS_ERROR);
      expect(server.resource['service.name']).toBe('ai-gateway');
      const served = fake.requests[1].body.model as string;
      expect(server.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        // openai-compatible has no well-known provider name: the provider's name in the config.
        'gen_ai.provider.name': 'primary',
        'gen_ai.request.model': MODEL.id,
        'gen_ai.response.model': served,
        'gen_ai.response.id': answer.id,
        'gen_ai.usage.input_tokens': 12,
        'gen_ai.usage.output_tokens': 5,
        'gen_ai.usage.cache_read.input_tokens': 0,
        'gen_ai.usage.cache_creation.input_tokens': 0,
        'gen_ai.usage.reasoning.output_tokens': 0,
        'gateway.cost_usd': Number(costMicros(MODEL, 12, 5)) / 1e6,
        'gateway.account_id': suite.accountId,
        'gateway.key_id': suite.keyId,
        'gateway.request_id': requestId,
        'http.response.status_code': 200,
      });

      // Two attempts, retries visible: the first failed with the upstream's 500, the second served.
      expect(attempts).toHaveLength(2);
      for (const attempt of attempts) {
        expect(attempt.parentSpanId).toBe(server.spanId);
        expect(attempt.startNs >= server.startNs && attempt.endNs <= server.endNs).toBe(true);
        expect(attempt.attributes).toMatchObject({ 'http.request.method': 'POST', 'server.address': '127.0.0.1', 'url.full': `${fake.url}/chat/completions` });
      }
      expect(attempts[0].status.code).toBe(STATUS_ERROR);
      expect(attempts[0].attributes).toMatchObject({ 'http.response.status_code': 500, 'error.type': '500' });
      expect(attempts[1].status.code).not.toBe(STATUS_ERROR);
      expect(attempts[1].attributes['http.response.status_code']).toBe(200);
      expect(attempts[1].attributes['error.type']).toBeUndefined();

      // Each attempt carried its own span as traceparent upstream, in the client's trace; no key in any attribute.
      expect(fake.requests).toHaveLength(2);
      fake.requests.forEach((request, i) => {
        expect(request.headers.traceparent).toBe(`00-${client.traceId}-${attempts[i].spanId}-01`);
        expect(request.headers.tracestate).toBe('client=1');
      });
      expect(anyAttributeMentions([server, ...attempts], String(fake.requests[0].headers.authorization).replace(/^Bearer /, ''))).toBe(false);

      // No message content by default.
      expect(server.attributes['gen_ai.input.messages']).toBeUndefined();
      expect(server.attributes['gen_ai.output.messages']).toBeUndefined();
      expect(anyAttributeMentions([server, ...attempts], PROMPT)).toBe(false);
      expect(receiver.contentTypes.every((type) => type.startsWith('application/json'))).toBe(true);
    });

    it('starts a trace of its own for a client without traceparent, and marks a failed request with its error code', async () => {
      const { fake, receiver, gw, key } = suite;
      fake.failNext('status4xx');
      const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'hi' }], stream: true });
      expect(res.status).toBe(400);
      const requestId = res.headers.get('x-request-id');
      await res.text();
      const server = await receiver.waitForSpan((s) => s.attributes['gateway.request_id'] === requestId);
      expect(server.parentSpanId).toBe('');
      expect(server.status).toMatchObject({ code: STATUS_ERROR, message: 'upstream_rejected' });
      expect(server.attributes['error.type']).toBe('upstream_rejected');
      expect(server.attributes['http.response.status_code']).toBe(400);
      const attempts = await receiver.waitForTrace(server.traceId, (s) => s.some((x) => x.kind === CLIENT));
      expect(attempts.find((s) => s.kind === CLIENT)!.attributes['error.type']).toBe('400');
    });

    it('traces a Bedrock attempt made through the AWS SDK, its traceparent signed with the request', async () => {
      const { bedrock, receiver, gw, key } = suite;
      const client = clientTraceparent();
      const res = await postChat(gw, key, { model: BEDROCK_MODEL.id, messages: [{ role: 'user', content: 'hi' }] }, { headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: client.header } });
      expect(res.status).toBe(200);
      const { server, attempts } = await spansOf(receiver, client.traceId, 1);
      expect(server.attributes).toMatchObject({ 'gen_ai.provider.name': 'aws.bedrock', 'gen_ai.request.model': BEDROCK_MODEL.id });
      expect(attempts).toHaveLength(1);
      expect(attempts[0].parentSpanId).toBe(server.spanId);
      expect(attempts[0].attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 200, 'server.address': '127.0.0.1' });
      expect(String(attempts[0].attributes['url.full'])).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/model\/.+\/converse$/);
      expect(bedrock.requests).toHaveLength(1);
      expect(bedrock.requests[0].headers.traceparent).toBe(`00-${client.traceId}-${attempts[0].spanId}-01`);
      expect(bedrock.requests[0].signatureValid).toBe(true);
    });

    it('gives the other /v1 routes a plain HTTP server span', async () => {
      const { receiver, gw, key } = suite;
      const client = clientTraceparent();
      const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}`, traceparent: client.header } });
      expect(res.status).toBe(200);
      const [span] = await receiver.waitForTrace(client.traceId, (s) => s.length > 0);
      expect(span).toMatchObject({ name: 'GET /v1/models', kind: SERVER, parentSpanId: client.parentId });
      expect(span.attributes['gen_ai.operation.name']).toBeUndefined();
      expect(span.attributes['gateway.key_id']).toBe(suite.keyId);
    });
  });

  describe(`with ${CONTENT_VARIABLE}=true`, () => {
    const suite = useTracedGateway({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '{receiver}/v1/traces', OTEL_BSP_SCHEDULE_DELAY: '50', [CONTENT_VARIABLE]: 'true' });

    it('records the prompt and the completion as gen_ai.input.messages and gen_ai.output.messages', async () => {
      const { receiver, gw, key } = suite;
      const client = clientTraceparent();
      const body = { model: MODEL.id, max_tokens: 50, messages: [{ role: 'user', content: PROMPT }] };
      const res = await postJson(gw, key, '/v1/messages', body, { headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01', traceparent: client.header } });
      expect(res.status).toBe(200);
      const { server } = await spansOf(receiver, client.traceId, 1);
      expect(JSON.parse(String(server.attributes['gen_ai.input.messages']))).toEqual([{ role: 'user', parts: [{ type: 'text', content: PROMPT }] }]);
      // The answer as the upstream gave it (chat's shape), whatever the client's dialect.
      expect(JSON.parse(String(server.attributes['gen_ai.output.messages']))).toEqual([
        { role: 'assistant', parts: [{ type: 'text', content: 'Hello from the fake upstream.' }], finish_reason: 'stop' },
      ]);
    });

    it('records a streamed answer as its text (Responses, streamed)', async () => {
      const { receiver, gw, key } = suite;
      const client = clientTraceparent();
      const res = await postJson(gw, key, '/v1/responses', { model: MODEL.id, input: PROMPT, stream: true }, { headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: client.header } });
      expect(res.status).toBe(200);
      await res.text();
      const { server } = await spansOf(receiver, client.traceId, 1);
      expect(JSON.parse(String(server.attributes['gen_ai.input.messages']))).toEqual([{ role: 'user', parts: [{ type: 'text', content: PROMPT }] }]);
      expect(JSON.parse(String(server.attributes['gen_ai.output.messages']))).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'Hello from the fake upstream.' }] }]);
      expect(server.attributes['gen_ai.response.id']).toMatch(/^chatcmpl-/);
    });

    it('bounds what it records of a long prompt', async () => {
      const { receiver, gw, key } = suite;
      const client = clientTraceparent();
      const long = 'x'.repeat(100_000);
      const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: long }] }, { headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: client.header } });
      expect(res.status).toBe(200);
      const { server } = await spansOf(receiver, client.traceId, 1);
      const [message] = JSON.parse(String(server.attributes['gen_ai.input.messages'])) as { parts: { content: string }[] }[];
      expect(message.parts[0].content).toBe('x'.repeat(16 * 1024));
    });
  });

  describe('with no OTLP endpoint', () => {
    const suite = useTracedGateway(null);

    it('exports nothing, registers no tracer provider and sends no traceparent upstream', async () => {
      const { fake, receiver, gw, key } = suite;
      const client = clientTraceparent();
      const res = await postChat(gw, key, { model: MODEL.id, messages: [{ role: 'user', content: 'hi' }] }, { headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: client.header } });
      expect(res.status).toBe(200);
      await res.json();
      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0].headers.traceparent).toBeUndefined();
      // The global API answers with non-recording spans: no SDK behind it.
      const probe = trace.getTracer('probe').startSpan('probe');
      expect(probe.isRecording()).toBe(false);
      expect(probe.spanContext().traceId).toBe('00000000000000000000000000000000');
      await sleep(300);
      expect(receiver.requests).toBe(0);
    });
  });
});
