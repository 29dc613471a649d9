import { randomFillSync } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

const ID_BYTES = 12;
// Random bytes drawn 256 ids at a time: one call into the CSPRNG per 256 requests instead of one each.
const pool = Buffer.alloc(ID_BYTES * 256);
let offset = pool.length;

export function newRequestId(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  offset += ID_BYTES;
  return `req_${pool.toString('hex', offset - ID_BYTES, offset)}`;
}

/** Gives the request its id once and echoes it in `x-request-id` on every response. */
export function assignRequestId(req: IncomingMessage & { id?: unknown }, res: ServerResponse): string {
  if (typeof req.id === 'string') return req.id;
  const id = newRequestId();
  req.id = id;
  if (!res.headersSent) res.setHeader('x-request-id', id);
  return id;
}
