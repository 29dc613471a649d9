import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SseWriter } from './sse';

/** Serves one stream written by `write` and returns the body a real HTTP client received. */
async function receive(write: (sut: SseWriter) => Promise<void>): Promise<string> {
  const server = http.createServer((_req, res) => void write(new SseWriter(res)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve(body));
          res.on('error', reject);
        })
        .on('error', reject);
    });
  } finally {
    server.close();
  }
}

describe(SseWriter.name, () => {
  it('delivers every event sent in the tick that ends the stream, before its end (Node 24 sent the end first)', async () => {
    const body = await receive(async (sut) => {
      await sut.send({ n: 1 });
      await new Promise((resolve) => setTimeout(resolve, 5));
      // The last events of a stream and its end usually come from one upstream read: one tick.
      await sut.send({ n: 2 });
      await sut.send({ n: 3 });
      sut.end('[DONE]');
    });
    expect(body).toBe('data: {"n":1}\n\ndata: {"n":2}\n\ndata: {"n":3}\n\ndata: [DONE]\n\n');
  });

  it('ends a stream with no last event after the events of the same tick', async () => {
    const body = await receive(async (sut) => {
      await sut.sendNamed('response.created', { a: 1 });
      await sut.sendNamed('response.completed', { a: 2 });
      sut.end();
    });
    expect(body).toBe('event: response.created\ndata: {"a":1}\n\nevent: response.completed\ndata: {"a":2}\n\n');
  });
});
