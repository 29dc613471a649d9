import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * For a request refused before its body was read to the end (413, a timed-out upload): no more of the
 * body is read, and the answer goes out with `Connection: close`, so that Node ends the socket once the
 * answer is flushed and destroys it then. Without this, Node reads the rest of the body before the
 * connection can serve its next request: a 50 MB upload refused at 4 MB would still be read to its end.
 * Call it before the answer is written (before throwing the GatewayError the filter renders).
 */
export function refuseUnreadBody(req: IncomingMessage, res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
  req.unpipe();
  req.pause();
  // Node reads (dumps) a body nobody has read before the socket can close; a read of 0 bytes marks it as
  // read, so what arrives until the close stays in the socket's buffers instead.
  req.read(0);
  endWithConnection(req);
}

/**
 * Ends a request whose body will never arrive once its connection is gone: Node stops tracking a request
 * whose response has finished, so without this its readers (the upload's, a JSON body's) would wait forever.
 */
export function endWithConnection(req: IncomingMessage): void {
  req.socket.once('close', () => req.destroy());
}
