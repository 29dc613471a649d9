import { createServer, request as httpRequest, Server } from 'node:http';
import { AddressInfo } from 'node:net';

/** One request a real client sent, as it reached the gateway, and what the gateway answered. */
export interface CapturedExchange {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body; the raw text when it is not JSON. */
  body: any;
  status: number;
  responseHeaders: Record<string, string | string[] | undefined>;
  /** The answer's first 2,000 characters (an error body, or the start of a stream). */
  responseStart: string;
}

export interface ClientCapture {
  /** Where the client is pointed: http://127.0.0.1:<port>. */
  url: string;
  exchanges: CapturedExchange[];
  /** The exchanges in a few lines each: what a failing test prints. */
  summary(): string;
  close(): Promise<void>;
}

/**
 * A recording pass-through in front of the gateway: the real CLIs talk to it as to the gateway, and the tests see
 * what they sent and what they got (the bodies of new client versions are captured the same way: DESIGN.md section 11).
 */
export async function startClientCapture(gatewayUrl: string): Promise<ClientCapture> {
  const target = new URL(gatewayUrl);
  const exchanges: CapturedExchange[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const exchange: CapturedExchange = {
        method: req.method ?? '', path: req.url ?? '', headers: { ...req.headers }, body: parsed(raw.toString('utf8')),
        status: 0, responseHeaders: {}, responseStart: '',
      };
      exchanges.push(exchange);
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
        (answer) => {
          exchange.status = answer.statusCode ?? 0;
          exchange.responseHeaders = { ...answer.headers };
          res.writeHead(exchange.status, answer.headers);
          answer.on('data', (chunk: Buffer) => {
            if (exchange.responseStart.length < 2000) exchange.responseStart += chunk.toString('utf8').slice(0, 2000 - exchange.responseStart.length);
            res.write(chunk);
          });
          answer.on('end', () => res.end());
          answer.on('error', () => res.destroy());
        },
      );
      upstream.on('error', (err) => {
        exchange.status = 599;
        exchange.responseStart = String(err);
        res.destroy();
      });
      upstream.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exchanges,
    summary: () => exchanges.map((e) => `${e.method} ${e.path} → ${e.status} ${e.status >= 400 ? e.responseStart.slice(0, 500) : ''}`).join('\n'),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
