import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { ChargeWriter, MeteredRequest, UsageMeter, UsageRecordSink } from './usage-meter';
import { NO_TOKENS, UsageRecordValues } from './usage-record';

class FakeResponse extends EventEmitter {
  headersSent = true;
  writableEnded = false;
  writableFinished = true;
  statusCode = 200;

  close(status: number, finished = true): void {
    this.statusCode = status;
    this.writableFinished = finished;
    this.emit('close');
  }
}

function setup(body: unknown = { model: 'dev-echo' }, route?: string, path = '/v1/chat/completions') {
  const uncharged: UsageRecordValues[] = [];
  const charged: UsageRecordValues[] = [];
  const sink: UsageRecordSink = {
    writeUncharged: (record) => void uncharged.push(record),
    writeCharged: (record, charge) => {
      charged.push(record);
      void charge(record);
    },
  };
  const req: MeteredRequest = { id: 'req_1', url: path, body, auth: { accountId: 'acc', keyId: 'key' }, routeOptions: route === undefined ? undefined : { url: route } };
  const res = new FakeResponse();
  const meter = new UsageMeter(sink, req, res as unknown as ServerResponse);
  return { meter, res, uncharged, charged };
}

describe(UsageMeter.name, () => {
  it('writes nothing until both the response has closed and the handler is done, then once', () => {
    const { meter, res, uncharged } = setup();
    meter.describe({ model: 'dev-echo', streamed: true });
    res.close(200);
    expect(uncharged).toHaveLength(0);
    meter.handled();
    meter.handled();
    res.emit('close');
    expect(uncharged).toHaveLength(1);
    expect(uncharged[0]).toMatchObject({ request_id: 'req_1', account_id: 'acc', key_id: 'key', model: 'dev-echo', status: 200, streamed: true, error_code: null });
  });

  it('waits for the response to close when the handler finished first', () => {
    const { meter, res, uncharged } = setup();
    meter.handled();
    expect(uncharged).toHaveLength(0);
    res.close(402);
    expect(uncharged).toHaveLength(1);
    expect(uncharged[0].status).toBe(402);
  });

  it('hands a charged request to its charge writer with its tokens, not to the uncharged insert', () => {
    const { meter, res, uncharged, charged } = setup();
    const writes: UsageRecordValues[] = [];
    const charge: ChargeWriter = async (record) => {
      writes.push(record);
      return 42n;
    };
    const tokens = { promptTokens: 7, completionTokens: 3, cachedTokens: 4, cacheWriteTokens: 1, cacheWrite1hTokens: 1, audioInputTokens: 2, audioOutputTokens: 1, reasoningTokens: 2 };
    meter.charged(tokens, charge);
    meter.handled();
    res.close(200);
    expect(uncharged).toHaveLength(0);
    expect(charged).toHaveLength(1);
    expect(writes[0]).toMatchObject({
      prompt_tokens: 7, completion_tokens: 3, cached_tokens: 4, cache_write_tokens: 1, cache_write_1h_tokens: 1, audio_input_tokens: 2, audio_output_tokens: 1, reasoning_tokens: 2, status: 200,
    });
  });

  it('records no tokens of any class for a request that used none', () => {
    const { meter, res, uncharged } = setup();
    meter.handled();
    res.close(402);
    expect(uncharged[0]).toMatchObject({
      prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0, audio_input_tokens: 0, audio_output_tokens: 0, reasoning_tokens: 0,
    });
  });

  it('records a client that left before the response was complete as 499, unless an error was answered', () => {
    const left = setup();
    left.meter.handled();
    left.res.close(200, false);
    expect(left.uncharged[0].status).toBe(499);

    const broken = setup();
    broken.meter.failed('upstream_error');
    broken.meter.handled();
    broken.res.close(200, false);
    expect(broken.uncharged[0]).toMatchObject({ status: 200, error_code: 'upstream_error' });
  });

  it('records the model as sent, made storable, when the handler never named one', () => {
    const { meter, res, uncharged } = setup({ model: `bad\u0000${'x'.repeat(100)}` });
    meter.handled();
    res.close(400);
    expect(uncharged[0].model).not.toContain('\u0000');
    expect(uncharged[0].model!.length).toBeLessThanOrEqual(64);
  });

  it('carries audio seconds with three decimals and the speech characters', () => {
    const { meter, res, uncharged } = setup();
    meter.describe({ audioSeconds: 1.23456, inputChars: 12 });
    meter.handled();
    res.close(200);
    expect(uncharged[0]).toMatchObject({ audio_seconds: '1.235', input_chars: 12 });
  });

  it('records the route matched, parameters named, so that each id is not an endpoint of its own', () => {
    const { meter, res, uncharged } = setup({}, '/v1/models/*', '/v1/models/acme%2Fllama');
    meter.handled();
    res.close(404);
    expect(uncharged[0].endpoint).toBe('/v1/models/{id}');

    const unrouted = setup({}, undefined, `/v1/${'x'.repeat(500)}`);
    unrouted.meter.handled();
    unrouted.res.close(404);
    expect(unrouted.uncharged[0].endpoint.length).toBeLessThanOrEqual(128);
  });

  it('writes a response the handler has ended as soon as the handler is done, without waiting for the flush', () => {
    const { meter, res, charged } = setup();
    meter.charged({ ...NO_TOKENS, promptTokens: 1, completionTokens: 1 }, async () => 1n);
    res.writableEnded = true;
    meter.handled();
    expect(charged).toHaveLength(1);
    expect(charged[0].status).toBe(200);
    res.close(200);
    expect(charged).toHaveLength(1);
  });
});
