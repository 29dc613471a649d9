import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { BodyWatch } from './body-watch';

/**
 * For a request whose body itself is refused (413 past the limit, a stalled upload's 408): no more of the
 * body is read, and the answer goes out with `Connection: close`. Once it is flushed, Node closes the socket
 * (`destroySoon`): here with closeAnswered's lingering close, the FIN after the answer and the socket destroyed
 * only LINGER_MS later, since destroying it at once with the client's bytes unread sends a reset that can make
 * the client's kernel drop the 413 it holds (seen in CI: a chunked 50 MB upload read "" instead of its 413).
 * Without this, Node reads the rest of the body before the connection can serve its next request: a 50 MB
 * upload refused at 4 MB would still be read to its end. Call it before the answer is written (before throwing
 * the GatewayError the filter renders).
 */
export function refuseUnreadBody(req: IncomingMessage, res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
  req.unpipe();
  req.pause();
  // Node reads (dumps) a body nobody has read before the socket can close; a read of 0 bytes marks it as
  // read, so what arrives until the close stays in the socket's buffers instead.
  req.read(0);
  const socket = req.socket;
  socket.destroySoon = () => closeAnswered(req, socket);
  endWithConnection(req);
}

/** Connections reading and dropping the body of a request already answered (discardUnreadBody). */
const discarding = new WeakSet<Socket>();

/**
 * For a request refused before or apart from its body (401, 402, 403, 429, a 400 of its headers or form):
 * the answer goes out on a connection that stays open while the rest of the body is read and dropped, so
 * that a client still writing it reads the answer. Closing at once (as refuseUnreadBody does) would leave
 * the client's bytes unread in the socket, and the kernel answers those with a reset: the client's write
 * fails with EPIPE or ECONNRESET, often before it has read the answer (DESIGN.md 12.3).
 * At most `maxBytes` more are read, with no silence longer than `idleMs`; past either the connection is
 * closed (closeAnswered). Node's request timeout (limits.request_timeout_ms) still bounds the whole body, and its
 * keep-alive timeout any silence once the answer is out. A body read to its end leaves a connection that
 * serves the next request, or closes it if the client asked for that. Call it before the answer is written.
 */
export function discardUnreadBody(req: IncomingMessage, res: ServerResponse, maxBytes: number, idleMs: number): void {
  if (req.destroyed) return;
  const socket = req.socket;
  discarding.add(socket);
  if (!res.shouldKeepAlive) closeOnceBodyRead(req, socket);
  // A reader that stopped midway (the upload's form after a parse error) lets go of the body.
  req.unpipe();
  const watch = new BodyWatch(req, maxBytes, idleMs, () => closeAnswered(req, socket));
  req.once('end', () => {
    watch.end();
    discarding.delete(socket);
  });
  req.resume();
}

/**
 * How long a connection given up on (past the discard's bytes or its silence) stays open, unread, after its
 * FIN: the time the client has to read the answer before the reset that closing with unread bytes sends. 2 s
 * was not enough for a client starved of CPU on a loaded 2-core machine (a CI run read no byte of its 402).
 */
const LINGER_MS = 5000;

/**
 * Closes a connection whose answer is out but whose body is still coming: reading stops, the FIN follows the
 * answer, and the socket is destroyed only LINGER_MS later. Destroyed at once, with the client's bytes unread
 * in its buffers, the kernel would answer with a reset, and a reset makes the client's kernel drop the answer
 * it holds unread: the client would see ECONNRESET instead of the error object.
 */
function closeAnswered(req: IncomingMessage, socket: Socket): void {
  req.pause();
  socket.pause();
  socket.end();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

/**
 * A connection that closes after this answer (the client sent `Connection: close`, or HTTP/1.0): Node ends
 * and destroys the socket once the answer is flushed (`destroySoon`), with the body's rest still arriving.
 * Here it waits until the body is read as well, so that a client still writing meets neither an end nor a
 * reset before it is done (a lingering close; RFC 9112 section 9.6 on closing with unread data).
 */
function closeOnceBodyRead(req: IncomingMessage, socket: Socket): void {
  const destroySoon = socket.destroySoon.bind(socket);
  let answered = false;
  socket.destroySoon = () => {
    answered = true;
    if (req.complete) destroySoon();
  };
  req.once('end', () => answered && destroySoon());
}

/** The connection is dropping the body of a request it has answered: a later refusal of that request (its timeout) only closes it. */
export function isDiscardingBody(socket: Socket): boolean {
  return discarding.has(socket);
}

/**
 * Ends a request whose body will never arrive once its connection is gone: Node stops tracking a request
 * whose response has finished, so without this its readers (the upload's, a JSON body's) would wait forever.
 */
export function endWithConnection(req: IncomingMessage): void {
  req.socket.once('close', () => req.destroy());
}
