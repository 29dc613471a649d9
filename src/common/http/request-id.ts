import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

export function newRequestId(): string {
  return `req_${randomBytes(12).toString('hex')}`;
}

/** Gives the request its id once and echoes it in `x-request-id` on every response. */
export function assignRequestId(req: IncomingMessage & { id?: unknown }, res: ServerResponse): string {
  if (typeof req.id === 'string') return req.id;
  const id = newRequestId();
  req.id = id;
  if (!res.headersSent) res.setHeader('x-request-id', id);
  return id;
}
