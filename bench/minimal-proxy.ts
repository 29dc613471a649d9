import { createServer } from 'node:http';
import { Pool } from 'undici';

/**
 * The floor any gateway is compared with: a pass-through proxy (node:http + an undici keep-alive pool)
 * that forwards the body and streams the answer back, with no auth, billing or metering.
 */
const upstream = new Pool(process.argv[2], { connections: 2048, keepAliveTimeout: 30_000 });

const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => {
    upstream
      .request({ method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, body: Buffer.concat(parts) })
      .then((answer) => {
        res.writeHead(answer.statusCode, { 'content-type': String(answer.headers['content-type'] ?? 'application/json') });
        answer.body.pipe(res);
      })
      .catch((err: Error) => {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: err.message } }));
      });
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${typeof address === 'object' && address ? address.port : 0}\n`);
});
