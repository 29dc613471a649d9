import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { SIGNATURE_HEADER, verifySignature } from '../../src/webhooks/webhook-signature';

/** One webhook call as a receiver saw it. */
export interface ReceivedCall {
  event: { id: string; type: string; created: number; data: Record<string, any> };
  /** Whether gateway-signature signs the body with the receiver's secret, within five minutes. */
  signed: boolean;
}

/**
 * A real HTTP receiver of webhook calls, on a port that stays its own while it is down (stop, then start again),
 * answering `status` (200 by default) after `delayMs`.
 */
export class WebhookReceiver {
  readonly calls: ReceivedCall[] = [];
  status = 200;
  delayMs = 0;
  private server: Server | undefined;
  port = 0;

  constructor(private readonly secret: string) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Down: connections are refused until start. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The calls that carried `type`, for `subject` when given (a data field and its value). */
  of(type: string, match: Record<string, unknown> = {}): ReceivedCall[] {
    return this.calls.filter((c) => c.event.type === type && Object.entries(match).every(([k, v]) => c.event.data[k] === v));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.status >= 200 && this.status < 300) {
      const header = String(req.headers[SIGNATURE_HEADER] ?? '');
      this.calls.push({ event: JSON.parse(body), signed: verifySignature(this.secret, body, header, Math.floor(Date.now() / 1000)) });
    }
    res.writeHead(this.status, { 'content-type': 'text/plain' }).end('ok');
  }
}

/** Polls `check` until it returns true, or fails after `timeoutMs` with `what`. */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}
