import fastify, { FastifyInstance } from 'fastify';
import { createRootLogger } from '../logging/root-logger';
import { newRequestId } from './request-id';
import { registerRequestHooks } from './request-hooks';

async function setup(): Promise<{ lines: Record<string, any>[]; app: FastifyInstance }> {
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
  await app.ready();
  return { lines, app };
}

describe('registerRequestHooks', () => {
  it('gives the request its id before the handler, and logs one line when the response closes', async () => {
    const { lines, app } = await setup();
    const res = await app.inject({ method: 'GET', url: '/v1/models?limit=2', headers: { authorization: 'Bearer gwk_secret_value' } });
    const id = res.json().id;
    expect(id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(res.headers['x-request-id']).toBe(id);
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
    const { lines, app } = await setup();
    await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: {} }).catch(() => undefined);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toEqual([expect.objectContaining({ msg: 'request aborted', method: 'POST', path: '/v1/chat/completions' })]);
    await app.close();
  });

  it('does not log /healthz, but still gives it a request id', async () => {
    const { lines, app } = await setup();
    const res = await app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toHaveLength(0);
    await app.close();
  });
});
