import { randomFillSync } from 'node:crypto';

const ID_BYTES = 12;
// Random bytes drawn 256 ids at a time: one call into the CSPRNG per 256 requests instead of one each.
const pool = Buffer.alloc(ID_BYTES * 256);
let offset = pool.length;

/** A request's id (Fastify's `genReqId`), echoed in `x-request-id` on every response (registerRequestHooks). */
export function newRequestId(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  offset += ID_BYTES;
  return `req_${pool.toString('hex', offset - ID_BYTES, offset)}`;
}
