import {
  BadRequestException,
  ForbiddenException,
  Logger,
  NotFoundException,
  PayloadTooLargeException,
  ServiceUnavailableException,
  UnauthorizedException,
} from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { ThrottlerException } from '@nestjs/throttler';
import { GatewayConfig, LimitsConfig } from '../../config/gateway-config.schema';
import { ErrorCode, GatewayError } from '../../errors';
import { ErrorAnswerListener } from '../http/error-answer-listener';
import { GatewayExceptionFilter } from './gateway-exception.filter';

/** Fastify's reply as the filter uses it: status, headers and body on the reply; a stream's state on `raw`. */
interface FakeResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: unknown;
  ended: boolean;
  raw: { headersSent: boolean; writableEnded: boolean; setHeader(name: string, value: string): void; end(): void };
  code(code: number): FakeResponse;
  header(name: string, value: string): FakeResponse;
  type(contentType: string): FakeResponse;
  send(body: string): FakeResponse;
}

function fakeResponse(headersSent = false): FakeResponse {
  const res: FakeResponse = {
    statusCode: 200,
    headers: {},
    body: undefined,
    ended: false,
    raw: {
      headersSent,
      writableEnded: false,
      setHeader(name, value) {
        if (this.headersSent) throw new Error('setHeader() after headers were sent');
        res.headers[name.toLowerCase()] = value;
      },
      end() {
        res.ended = true;
        this.writableEnded = true;
      },
    },
    code(code) {
      if (this.raw.headersSent) throw new Error('code() after headers were sent');
      this.statusCode = code;
      return this;
    },
    header(name, value) {
      if (this.raw.headersSent) throw new Error('header() after headers were sent');
      this.headers[name.toLowerCase()] = value;
      return this;
    },
    type(contentType) {
      return this.header('content-type', contentType);
    },
    send(body) {
      if (this.raw.headersSent) throw new Error('send() after headers were sent');
      this.body = JSON.parse(body);
      this.raw.headersSent = true;
      this.raw.writableEnded = true;
      return this;
    },
  };
  return res;
}

/** Fastify's request: its id from genReqId, Node's request under it. */
function fakeRequest(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: 'req_0123456789abcdef01234567', url: '/v1/chat/completions', headers: {}, raw: { complete: true }, ...fields };
}

function run(exception: unknown, req: Record<string, unknown> = fakeRequest(), res = fakeResponse(), listener?: ErrorAnswerListener) {
  const sut = new GatewayExceptionFilter({ limits: new LimitsConfig() } as GatewayConfig, listener);
  sut.catch(exception, new ExecutionContextHost([req, res]));
  return { req, res };
}

describe(GatewayExceptionFilter.name, () => {
  let logged: jest.SpyInstance;

  beforeEach(() => {
    logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });
  afterEach(() => logged.mockRestore());

  it('renders a GatewayError with its own status, type, param and code', () => {
    const { res } = run(new GatewayError(ErrorCode.MissingModel, 'model is required', 'model'));
    expect(res.statusCode).toBe(400);
    expect(res.body).toEqual({
      error: { message: 'model is required', type: 'invalid_request_error', param: 'model', code: 'missing_model' },
    });
    expect(logged).not.toHaveBeenCalled();
  });

  it('keeps a status override (an upstream 4xx passed through)', () => {
    const { res } = run(new GatewayError(ErrorCode.UpstreamRejected, 'upstream said no', null, 422));
    expect(res.statusCode).toBe(422);
    expect((res.body as any).error.code).toBe('upstream_rejected');
  });

  it('turns an unexpected exception into 500 internal_error without its stack, and logs the stack with the request id', () => {
    const boom = new TypeError('cannot read properties of undefined (secret detail)');
    const { req, res } = run(boom);
    expect(res.statusCode).toBe(500);
    const body = res.body as any;
    expect(body.error).toMatchObject({ type: 'api_error', code: 'internal_error', param: null });
    expect(body.error.message).toContain(req.id as string);
    expect(JSON.stringify(body)).not.toContain('secret detail');
    expect(JSON.stringify(body)).not.toContain(boom.stack!.split('\n')[1].trim());
    expect(logged).toHaveBeenCalledWith(expect.objectContaining({ err: boom, requestId: req.id }), expect.any(String));
  });

  it('treats a thrown non-Error value as an internal error too', () => {
    const { res } = run('just a string');
    expect(res.statusCode).toBe(500);
    expect((res.body as any).error.code).toBe('internal_error');
  });

  it.each([
    [new NotFoundException('Cannot GET /v1/nope'), 404, 'not_found', 'invalid_request_error'],
    [new PayloadTooLargeException(), 413, 'payload_too_large', 'invalid_request_error'],
    [new BadRequestException(['name must be a string', 'extra should not exist']), 400, 'invalid_request_error', 'invalid_request_error'],
    [new UnauthorizedException(), 401, 'invalid_api_key', 'authentication_error'],
    [new ForbiddenException(), 403, 'invalid_request_error', 'invalid_request_error'],
    [new ThrottlerException(), 429, 'rate_limit_exceeded', 'rate_limit_error'],
    [new ServiceUnavailableException('database unreachable'), 503, 'service_unavailable', 'api_error'],
  ])('maps %p to %i %s', (exception, status, code, type) => {
    const { res } = run(exception);
    expect(res.statusCode).toBe(status);
    expect(res.body).toEqual({ error: { message: expect.any(String), type, param: null, code } });
    expect(logged).not.toHaveBeenCalled();
  });

  it.each([
    ['connection refused', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    ['a terminated connection', new Error('Connection terminated unexpectedly')],
    ['a server shutting down (57P01)', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })],
    ['a server starting up (57P03)', Object.assign(new Error('the database system is starting up'), { code: '57P03' })],
    ['a connection exception (08006)', Object.assign(new Error('connection failure'), { code: '08006' })],
    ['a pool connect timeout', new Error('timeout exceeded when trying to connect')],
    ['a statement timeout (57014)', Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' })],
    ['TypeORM wrapping one', Object.assign(new Error('Query failed'), { driverError: Object.assign(new Error('x'), { code: '57P02' }) })],
    ['an AggregateError of refusals', new AggregateError([Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })], 'connect')],
  ])('maps %s to 503 service_unavailable with Retry-After, logged as a warning', (_name, exception) => {
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { req, res } = run(exception);
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body).toEqual({ error: { message: expect.any(String), type: 'api_error', param: null, code: 'service_unavailable' } });
    expect(logged).not.toHaveBeenCalled();
    expect(warned).toHaveBeenCalledWith(expect.objectContaining({ requestId: req.id }), expect.stringContaining(req.id as string));
    warned.mockRestore();
  });

  it('keeps query faults (a unique violation) as 500 internal_error', () => {
    const { res } = run(Object.assign(new Error('duplicate key value'), { code: '23505' }));
    expect(res.statusCode).toBe(500);
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('joins class-validator messages into one readable message', () => {
    const { res } = run(new BadRequestException(['name must be a string', 'extra should not exist']));
    expect((res.body as any).error.message).toBe('name must be a string; extra should not exist');
  });

  it("quotes the request's own id (Fastify's genReqId, echoed in x-request-id by registerRequestHooks)", () => {
    const { req, res } = run(new Error('boom'), fakeRequest({ id: 'req_existing' }));
    expect(req.id).toBe('req_existing');
    expect((res.body as any).error.message).toContain('req_existing');
  });

  it('renders the error as JSON with its content type', () => {
    const { res } = run(new GatewayError(ErrorCode.NotFound, 'nope'));
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('tells the error-answer listener (the usage records) which code the request got', () => {
    const answered: string[] = [];
    const listener: ErrorAnswerListener = { answeredWithError: (_req, _res, code) => void answered.push(code) };
    run(new GatewayError(ErrorCode.InsufficientCredits, 'top up'), fakeRequest(), fakeResponse(), listener);
    expect(answered).toEqual(['insufficient_credits']);
  });

  it('only ends a response whose headers were already sent (a stream reports in-band)', () => {
    const res = fakeResponse(true);
    run(new Error('mid-stream failure'), fakeRequest({ id: 'req_x' }), res);
    expect(res.ended).toBe(true);
    expect(res.body).toBeUndefined();
  });
});
