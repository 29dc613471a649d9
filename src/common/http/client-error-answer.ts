import { maxHeaderSize, STATUS_CODES, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { LimitsConfig } from '../../config/gateway-config.schema';
import { ErrorCode, errorBodyFor, GatewayError } from '../../errors';
import { ErrorAnswerListener } from './error-answer-listener';
import { GatewayIncomingMessage } from './gateway-request';
import { endWithConnection, isDiscardingBody } from './refuse-unread-body';
import { newRequestId } from './request-id';

/** An error of Node's HTTP parser (`HPE_*`, with llhttp's fixed `reason`), a timeout, or a socket's own. */
interface ClientError extends Error {
  code?: string;
  reason?: string;
}

/** Node's own field: the response in progress on the socket (what its default clientError handling checks too). */
interface HttpSocket extends Socket {
  _httpMessage?: ServerResponse | null;
}

/** The client is gone: there is nobody to answer. */
const GONE = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ETIMEDOUT']);
/** At most one warning per window for requests Node refused, so that a flood of them cannot flood the logs. */
const LOG_WINDOW_MS = 10_000;

/**
 * Answers what Node's HTTP server refuses before the application sees a request (a bad request line,
 * headers over http.maxHeaderSize (16 KiB), a request not received within the timeouts, malformed chunked encoding) with the
 * gateway's error object and an x-request-id, instead of Node's bare status line; then closes the
 * connection. A request already in the application's hands is answered through its response, so that
 * its usage record carries the status and code.
 */
export function answerClientErrors(server: Server, limits: LimitsConfig, logger: Logger, errorAnswers: ErrorAnswerListener): void {
  const log = throttledWarning(logger);
  // Fastify's own answer (a bare 400 of its shape) gives way to this one.
  server.removeAllListeners('clientError');
  const answered = new WeakSet<Socket>();
  server.on('clientError', (err: ClientError, socket: HttpSocket) => {
    // A second error on a connection being answered (more bytes of a broken request, a later check):
    // the answer's flush closes it.
    if (answered.has(socket)) return;
    // A request already answered whose body is being dropped (its timeout, say): it gets no second answer.
    if (isDiscardingBody(socket)) return socket.destroy();
    const error = GONE.has(err.code ?? '') ? null : gatewayErrorOf(err, limits);
    if (!error) return socket.destroy();
    answered.add(socket);
    log(err.code ?? err.name, error);
    const response = socket._httpMessage;
    if (!socket.writable || response?.headersSent) return socket.destroy();
    if (response) return answerInFlight(response, error, errorAnswers);
    socket.end(rawAnswer(error, newRequestId()));
    socket.destroySoon();
  });
}

function gatewayErrorOf(err: ClientError, limits: LimitsConfig): GatewayError {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new GatewayError(
        ErrorCode.RequestTimeout,
        `The request was not received in time: its headers must arrive within ${limits.headers_timeout_ms} ms, all of it within ${limits.request_timeout_ms} ms.`,
      );
    case 'HPE_HEADER_OVERFLOW':
      return new GatewayError(ErrorCode.InvalidRequest, `The request line and headers exceed the limit of ${maxHeaderSize} bytes.`, null, 431);
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new GatewayError(ErrorCode.PayloadTooLarge, 'The chunk extensions of the request body exceed the limit of 16384 bytes.');
    default:
      // llhttp's reasons are fixed texts ("Invalid method encountered"); the request's bytes are never echoed.
      return new GatewayError(ErrorCode.InvalidRequest, `The request is not valid HTTP/1.1: ${err.reason ?? err.code ?? 'unreadable'}.`);
  }
}

function answerInFlight(res: ServerResponse, error: GatewayError, errorAnswers: ErrorAnswerListener): void {
  const req = res.req as GatewayIncomingMessage;
  const gatewayRequest = req.gatewayRequest;
  const requestId = gatewayRequest?.id ?? newRequestId();
  if (gatewayRequest) errorAnswers.answeredWithError(gatewayRequest, res, error.code);
  endWithConnection(req);
  const body = JSON.stringify(errorBodyFor(req.url ?? '', req.headers, error));
  res.writeHead(error.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'x-request-id': requestId, connection: 'close' });
  res.end(body);
}

function rawAnswer(error: GatewayError, requestId: string): string {
  const body = JSON.stringify(error.toBody());
  return (
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `x-request-id: ${requestId}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

function throttledWarning(logger: Logger): (cause: string, error: GatewayError) => void {
  let windowStart = -Infinity;
  let unlogged = 0;
  return (cause, error) => {
    const now = Date.now();
    if (now - windowStart < LOG_WINDOW_MS) {
      unlogged += 1;
      logger.debug({ cause, status: error.status, code: error.code }, 'Request refused by the HTTP server');
      return;
    }
    logger.warn(
      { cause, status: error.status, code: error.code, unloggedBefore: unlogged },
      `Request refused by the HTTP server (${cause}); at most one such warning per ${LOG_WINDOW_MS / 1000} s`,
    );
    windowStart = now;
    unlogged = 0;
  };
}
