import type { ServerResponse } from 'node:http';

/**
 * A 200 JSON answer with the headers Express's `res.json` gives it (ETag is off app-wide), without its
 * second look at the content type, the charset parse and the copy of the body into a Buffer: each chat
 * answer is one of these.
 */
export function sendJson(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
