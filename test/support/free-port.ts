import { createServer } from 'node:net';

/** A loopback TCP port free at the time of asking (for a server a test starts itself). */
export function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePromise(address.port) : reject(new Error('no port'))));
    });
  });
}
