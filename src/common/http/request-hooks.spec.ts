import fastify, { FastifyInstance } from 'fastify';
import { createRootLogger } from '../logging/root-logger';
import { newRequestId } from './request-id';
import { registerRequestHooks } from './request-hooks';

async function setup(): Promise<{ lines: Record<string, any>[]; app: FastifyInstance; url: string }> {
  const lines: Record<string, any>[] = [];
  const app = fastify({ genReqId: () => newRequestId() });
  registerRequestHooks(app, createRootLogger('info', { write: (line: string) => void lines.push(JSON.parse(line)) }));
  app.get('/v1/models', (request, reply) => {
    reply.code(401).send({ id: request.id });
  });
  app.get('/healthz', (_request, reply) => {
    reply.send('ok');
  });
  app.post('/v1/chat/completions', (_request, reply) => {
    reply.raw.destroy();
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { lines, app, url };
}

describe('registerRequestHooks', () => {
  it('gives the request its id before the handler, and logs one line when the response closes', async () => {
    const { lines, app, url } = await setup();
    const res = await fetch(`${url}/v1/models?limit=2`, { headers: { authorization: 'Bearer gwk_secret_value' } });
    const id = ((await res.json()) as { id: string }).id;
    expect(id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(res.headers.get('x-request-id')).toBe(id);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toEqual([
      expect.objectContaining({
        level: 30,
        msg: 'request completed',
        requestId: id,
        method: 'GET',
        path: '/v1/models',
        status: 401,
        responseTimeMs: expect.any(Number),
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('gwk_secret_value');
    await app.close();
  });

  it('says when the client went away before the response was finished', async () => {
    const { lines, app, url } = await setup();
    await expect(fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).rejects.toThrow();
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toEqual([expect.objectContaining({ msg: 'request aborted', method: 'POST', path: '/v1/chat/completions' })]);
    await app.close();
  });

  it('does not log /healthz, but still gives it a request id', async () => {
    const { lines, app, url } = await setup();
    const res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toHaveLength(0);
    await app.close();
  });
});
