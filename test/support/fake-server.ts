import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { AnswerGate } from './answer-gate';

/**
 * The scaffold every fake upstream stands on (fake-upstream.ts, fake-anthropic.ts, fake-gemini.ts, fake-bedrock.ts,
 * fake-azure-openai.ts): a real HTTP server on 127.0.0.1 (port 0: a free one), the record of the requests it
 * received and whether their client gave up on them, polling until a condition holds, and scripted failures
 * (`failNext`, `failure`, `failureByModel`). Each fake keeps only its wire format: routes, auth, validation, answers.
 */

/** What every fake records of a request, beside its wire format's own fields. */
export interface RecordedBase {
  /** The client closed the connection before the answer was complete. */
  aborted: boolean;
  /** The whole answer was written. */
  finished: boolean;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A refusal a fake answers: its HTTP status, the provider's name for the error, and its message. */
export class FakeRefusal extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export abstract class FakeServer<Rec extends RecordedBase, Mode extends string> {
  /** The base URL a provider's `base_url` or an SDK takes (set by `start`). */
  url = '';
  readonly requests: Rec[] = [];
  /** A mode applied to every request until cleared; `failNext` takes precedence. */
  failure: Mode | null = null;
  /** A mode for every request that names this (upstream) model: faults that concurrent requests do not share. */
  failureByModel: Record<string, Mode> = {};
  /** Waited before the answer starts (errors included). */
  responseDelayMs = 0;
  /** Waited between streamed events or chunks. */
  chunkDelayMs = 0;
  /** Good events before a mid-stream fault; null: the mode's default. */
  faultAfterEvents: number | null = null;
  /** TCP connections accepted so far (a keep-alive client reuses its connections). */
  connectionsOpened = 0;
  /** Closed by a test (`gate.hold()`): recorded requests wait there before any answer, until released. */
  readonly gate = new AnswerGate();
  private readonly queued: Mode[] = [];
  private server?: Server;

  /** The fake's name in its messages ("fake anthropic: condition not met in time"). */
  protected abstract readonly label: string;
  /** What follows the origin in `url` (OpenAI's fake: `/v1`). */
  protected readonly urlPath: string = '';

  /** Serves one request (its body not yet read). */
  protected abstract handle(req: IncomingMessage, res: ServerResponse): Promise<void>;

  /** The next `times` requests fail with `mode`, then normal answers resume. */
  failNext(mode: Mode, times = 1): void {
    for (let i = 0; i < times; i++) this.queued.push(mode);
  }

  /** Back to normal answers with an empty record; each fake resets its own settings too. */
  resetState(): void {
    this.requests.length = 0;
    this.queued.length = 0;
    this.failure = null;
    this.failureByModel = {};
    this.responseDelayMs = 0;
    this.chunkDelayMs = 0;
    this.faultAfterEvents = null;
  }

  /** The requests whose client went away before the answer was complete. */
  aborted(): Rec[] {
    return this.requests.filter((r) => r.aborted);
  }

  /** Resolves once `predicate` holds (polled), or throws after `timeoutMs`. */
  async waitFor(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`${this.label}: condition not met in time`);
      await sleep(10);
    }
  }

  async start(port = 0): Promise<this> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy());
    });
    server.keepAliveTimeout = 60_000;
    server.on('connection', () => this.connectionsOpened++);
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${this.urlPath}`;
    return this;
  }

  close(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }

  /** The scripted mode of the next request: by its model, else the next of `failNext`, else `failure`. */
  protected nextMode(model?: string): Mode | null {
    return (model !== undefined ? this.failureByModel[model] : undefined) ?? this.queued.shift() ?? this.failure;
  }

  /**
   * Adds `record` to `requests` and watches its answer: `finished` when it was all written, `aborted` when the client
   * went away first. Returns the fake's own way to break the connection, which never counts as the client's abort:
   * destroyed (default), reset (a TCP RST), or ended cleanly where the answer stands (no terminating chunk).
   */
  protected track(record: Rec, req: IncomingMessage, res: ServerResponse): (how?: 'reset' | 'end') => void {
    this.requests.push(record);
    let destroyedByUs = false;
    res.on('close', () => {
      record.finished = res.writableFinished;
      if (!res.writableFinished && !destroyedByUs) record.aborted = true;
    });
    return (how) => {
      destroyedByUs = true;
      if (how === 'reset') req.socket.resetAndDestroy();
      else if (how === 'end') req.socket.end();
      else req.socket.destroy();
    };
  }

  /**
   * Control over HTTP, for a fake run as its own process: POST /_fake/fail-next {"mode", "times"?},
   * POST /_fake/failure {"mode": null | mode}, POST /_fake/fault-after {"events": n | null}, POST /_fake/reset,
   * GET /_fake/requests; a fake adds its own through `controlMore`.
   */
  protected control(path: string, raw: string, res: ServerResponse): void {
    let body: any = {};
    try {
      body = raw.length ? JSON.parse(raw) : {};
    } catch {
      return sendJson(res, 400, { error: 'body is not JSON' });
    }
    if (path === '/_fake/fail-next' && body.mode) this.failNext(body.mode, body.times ?? 1);
    else if (path === '/_fake/failure') this.failure = body.mode ?? null;
    else if (path === '/_fake/fault-after') this.faultAfterEvents = body.events ?? null;
    else if (path === '/_fake/reset') this.resetState();
    else if (path === '/_fake/requests') return sendJson(res, 200, this.recordForControl());
    else if (!this.controlMore(path, body)) return sendJson(res, 404, { error: `${this.label}: no control ${path}` });
    sendJson(res, 200, { ok: true });
  }

  /** A fake's own control routes: true when `path` was one. */
  protected controlMore(_path: string, _body: any): boolean {
    return false;
  }

  /** What GET /_fake/requests answers. */
  protected recordForControl(): unknown {
    return { requests: this.requests };
  }
}

/** Runs `fake` as its own process when its module is the main one: prints its URL and is steered with /_fake/ routes. */
export function serveAsProcess(main: NodeModule, start: (port: number) => Promise<{ url: string; close(): Promise<void> }>, portEnv: string): void {
  if (require.main !== main) return;
  start(Number(process.env[portEnv] ?? 0)).then((fake) => {
    process.stdout.write(`${fake.url}\n`);
    process.on('SIGTERM', () => void fake.close().then(() => process.exit(0)));
  });
}

export function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * Resolves once the data is handed to the socket, so that a later destroy cannot discard it; false if the
 * write failed (the client went away).
 */
export function write(res: ServerResponse, data: string | Uint8Array): Promise<boolean> {
  return new Promise((resolve) => res.write(data, (err) => resolve(!err)));
}

/** A pause between chunks that ends early when the client goes away, so that no timer outlives a closed answer. */
export function pause(res: ServerResponse, ms: number): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.once('close', done);
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  sendRaw(res, status, contentType, JSON.stringify(body));
}

export function sendRaw(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** The path of a request URL and its query string (with its `?`, or ''). */
export function splitUrl(url: string | undefined): { path: string; query: string } {
  const [path, ...rest] = (url ?? '').split('?');
  return { path, query: rest.length ? `?${rest.join('?')}` : '' };
}

/** A request body as the OpenAI-shaped fakes record it: multipart text fields and the file (uploads), else its JSON. */
export interface ParsedBody {
  /** Parsed JSON body; undefined for multipart or unparseable bodies. */
  body: any;
  fields: Record<string, string>;
  file?: { filename: string; type: string; size: number };
}

export async function parseBody(contentType: string, raw: Buffer): Promise<ParsedBody> {
  const parsed: ParsedBody = { body: undefined, fields: {} };
  if (!contentType.startsWith('multipart/form-data')) return { ...parsed, body: parseJson(raw.toString('utf8')) };
  // The platform's own multipart parser (undici's Response.formData()).
  const form = await new Response(raw, { headers: { 'content-type': contentType } }).formData().catch(() => null);
  for (const [name, value] of form ?? []) {
    if (typeof value === 'string') parsed.fields[name] = value;
    else parsed.file = { filename: value.name, type: value.type, size: value.size };
  }
  return parsed;
}

/** JSON.parse, or undefined for a body that does not parse. */
export function parseJson(raw: string): any {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}
