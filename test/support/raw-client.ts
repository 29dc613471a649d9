import { connect, Socket } from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawClientOptions {
  /**
   * Keep writing what the test sends after the answer has come, as a client that writes its whole body
   * before it reads (Node's http client, a plain socket) does; by default writing stops at the answer.
   */
  writeAfterAnswer?: boolean;
}

/** One HTTP exchange over a raw socket: what the client wrote, and what came back when. */
export class RawClient {
  readonly socket: Socket;
  /** The client's port, by which the gateway's side of the connection is found. */
  localPort = 0;
  /** Bytes the socket accepted from the client (the kernel's buffers included). */
  written = 0;
  /** The first error of the client's socket (EPIPE, ECONNRESET once the gateway has closed), if any. */
  error: NodeJS.ErrnoException | null = null;
  answerAt: number | null = null;
  readonly startedAt = Date.now();
  /** Every byte the gateway sent. */
  received = Buffer.alloc(0);
  readonly answer: Promise<RawAnswer>;
  readonly closed: Promise<void>;

  constructor(
    url: string,
    private readonly options: RawClientOptions = {},
  ) {
    const { hostname, port } = new URL(url);
    this.socket = connect(Number(port), hostname, () => (this.localPort = this.socket.localPort!));
    this.socket.on('error', (err) => (this.error ??= err));
    this.closed = new Promise((resolve) => this.socket.once('close', () => resolve()));
    this.answer = new Promise((resolve, reject) => {
      this.socket.on('data', (chunk: Buffer) => {
        this.received = Buffer.concat([this.received, chunk]);
        const parsed = parseAnswer(this.received);
        if (parsed) {
          this.answerAt ??= Date.now();
          resolve(parsed);
        }
      });
      this.socket.once('close', () => reject(new Error(`closed without a complete answer: ${JSON.stringify(this.received.toString('latin1').slice(0, 200))}`)));
    });
    this.answer.catch(() => undefined);
  }

  get answered(): boolean {
    return this.answerAt !== null || this.socket.destroyed;
  }

  private get stopped(): boolean {
    return this.socket.destroyed || this.error !== null || (!this.options.writeAfterAnswer && this.answerAt !== null);
  }

  /** Writes, waiting for the socket to take each chunk; stops (without error) once the answer is in (unless told otherwise) or the socket closed. */
  async write(data: Buffer | string): Promise<void> {
    if (this.stopped) return;
    const buffer = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
    await new Promise<void>((resolve) =>
      this.socket.write(buffer, (err) => {
        if (err) this.error ??= err;
        else this.written += buffer.length;
        resolve();
      }),
    );
  }

  /** Writes `total` bytes of body in chunks of `chunkBytes`, as a chunked body when `chunked`; `pauseMs` between chunks. */
  async stream(total: number, opts: { chunked: boolean; chunkBytes?: number; pauseMs?: number }): Promise<void> {
    const size = opts.chunkBytes ?? 64 * 1024;
    for (let sent = 0; sent < total && !this.stopped; sent += size) {
      const length = Math.min(size, total - sent);
      const payload = Buffer.alloc(length, 0x61);
      await this.write(opts.chunked ? Buffer.concat([Buffer.from(`${length.toString(16)}\r\n`), payload, Buffer.from('\r\n')]) : payload);
      if (opts.pauseMs) await sleep(opts.pauseMs);
    }
  }

  elapsedToAnswer(): number {
    return (this.answerAt ?? Date.now()) - this.startedAt;
  }

  /** How many HTTP answers (status lines) the gateway sent on this connection. */
  answerCount(): number {
    return this.received.toString('latin1').match(/HTTP\/1\.1 \d{3} /g)?.length ?? 0;
  }

  close(): void {
    this.socket.destroy();
  }
}

function parseAnswer(data: Buffer): RawAnswer | null {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? NaN);
  if (!Number.isInteger(length) || data.length < end + 4 + length) return null;
  return { status: Number(statusLine.split(' ')[1]), headers, body: data.subarray(end + 4, end + 4 + length).toString('utf8') };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
