import type { ServerResponse } from 'node:http';

/** Status recorded for a response the client left before it was complete (nginx's convention). */
export const CLIENT_CLOSED_REQUEST = 499;

/** An AbortSignal that fires when the client goes away before its response is complete. */
export function abortOnClientClose(res: ServerResponse): AbortSignal {
  const abort = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  return abort.signal;
}
