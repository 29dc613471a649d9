import { EventEmitter } from 'node:events';
import type { NextFunction, Request, Response } from 'express';
import { createRootLogger } from '../logging/root-logger';
import { AccessLogMiddleware } from './access-log.middleware';

class FakeResponse extends EventEmitter {
  statusCode = 200;
  headersSent = false;
  writableFinished = false;
  headers: Record<string, string> = {};
  setHeader(name: string, value: string): void {
    this.headers[name.toLowerCase()] = value;
  }
}

function setup() {
  const lines: Record<string, any>[] = [];
  const sut = new AccessLogMiddleware(createRootLogger('info', { write: (line: string) => void lines.push(JSON.parse(line)) }));
  const call = (method: string, originalUrl: string, headers: Record<string, string> = {}) => {
    const req = { method, originalUrl, url: originalUrl, headers } as unknown as Request & { id?: string };
    const res = new FakeResponse();
    const next = jest.fn() as NextFunction;
    sut.use(req, res as unknown as Response, next);
    return { req, res, next };
  };
  return { lines, call };
}

describe(AccessLogMiddleware.name, () => {
  it('gives the request its id before the next handler, and logs one line when the response closes', () => {
    const { lines, call } = setup();
    const { req, res, next } = call('GET', '/v1/models?limit=2', { authorization: 'Bearer gwk_secret_value' });
    expect(req.id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(res.headers['x-request-id']).toBe(req.id);
    expect(next).toHaveBeenCalledWith();
    expect(lines).toHaveLength(0);

    res.statusCode = 401;
    res.writableFinished = true;
    res.emit('close');
    res.emit('close');

    expect(lines).toEqual([
      expect.objectContaining({
        level: 30,
        msg: 'request completed',
        requestId: req.id,
        method: 'GET',
        path: '/v1/models',
        status: 401,
        responseTimeMs: expect.any(Number),
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('gwk_secret_value');
  });

  it('says when the client went away before the response was finished', () => {
    const { lines, call } = setup();
    const { res } = call('POST', '/v1/chat/completions');
    res.emit('close');
    expect(lines).toEqual([expect.objectContaining({ msg: 'request aborted', method: 'POST', path: '/v1/chat/completions' })]);
  });

  it.each(['/healthz', '/readyz'])('does not log %s, but still gives it a request id', (path) => {
    const { lines, call } = setup();
    const { res, next } = call('GET', path);
    res.writableFinished = true;
    res.emit('close');
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    expect(next).toHaveBeenCalled();
    expect(lines).toHaveLength(0);
  });
});
