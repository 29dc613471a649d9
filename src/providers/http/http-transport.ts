import { Readable } from 'node:stream';
import { Dispatcher, errors, FormData, Pool } from 'undici';
import { TimeoutsConfig } from '../../config/gateway-config.schema';
import { startUpstreamSpan } from '../../tracing/upstream-span';
import { beforeHeaders, CredentialsRefused, UpstreamFailure } from '../upstream-failure';
import { UpstreamAuth } from './upstream-auth';

export interface UpstreamResponse {
  contentType: string;
  /** The answer's headers, names in lower case (Gemini's `x-gemini-service-tier`). */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: Readable;
}

/** What a provider asks of its upstream; each provider maps it to its own endpoint (UpstreamPath). */
export type UpstreamOperation = 'chat' | 'chat_stream' | 'transcription' | 'speech' | 'count_tokens';

/**
 * How a provider names its endpoints: the path (and query) under its base_url of an operation for one
 * upstream model (`/chat/completions`; Azure's `/openai/deployments/{model}/…?api-version=`, Gemini's
 * `/v1beta/models/{model}:streamGenerateContent?alt=sse`).
 */
export type UpstreamPath = (operation: UpstreamOperation, upstreamModel: string) => string;

/** Where and how a transport connects: the provider config's fields it reads. */
export interface TransportConfig {
  base_url: string;
  timeouts: TimeoutsConfig;
  max_connections: number;
}

/**
 * The message a client sees for an upstream's error answer, when a provider reads more of the body than its
 * `error.message` (Azure's content-filter categories); null or '': the message as read.
 */
export type UpstreamErrorMessage = (status: number, body: unknown) => string | null;

/**
 * Whether an error answer other than a 401 or 403 says the gateway's credential is bad (Gemini answers a wrong key
 * 400 INVALID_ARGUMENT, reason API_KEY_INVALID).
 */
export type CredentialsRefusal = (status: number, body: unknown) => boolean;

/** What a provider decides about its HTTP: how requests are authenticated, where each operation goes, and (optionally) how its errors read. */
export interface TransportHooks {
  auth: UpstreamAuth;
  path: UpstreamPath;
  errorMessage?: UpstreamErrorMessage;
  refusesCredentials?: CredentialsRefusal;
}

/** Keep-alive connections idle longer than this are closed (most upstreams close at 60 s or later). */
const KEEP_ALIVE_MS = 30_000;
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/**
 * The largest whole JSON answer (chat completion, transcription) read into memory; a larger or endless
 * body is a bad_response. Generous: a 128k-token completion with logprobs stays well under it.
 */
export const MAX_JSON_ANSWER_BYTES = 16 * 1024 * 1024;

/**
 * HTTP to one upstream, for every provider type: a keep-alive pool, its timeouts, and the provider's hooks
 * (auth headers, the path of each operation). Every failure becomes an UpstreamFailure; a non-2xx answer
 * becomes `credentials_refused` (401, 403), `rejected` (other 4xx) or `server_error` (5xx) with the upstream's own message.
 */
export class HttpTransport {
  private readonly pool: Pool;
  private readonly origin: string;
  private readonly basePath: string;

  constructor(
    readonly name: string,
    config: TransportConfig,
    private readonly hooks: TransportHooks,
  ) {
    const url = new URL(config.base_url);
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connections: config.max_connections,
      connect: { timeout: config.timeouts.connect_ms },
      keepAliveTimeout: KEEP_ALIVE_MS,
      headersTimeout: config.timeouts.request_ms,
      bodyTimeout: config.timeouts.request_ms,
    });
  }

  /**
   * POSTs an operation's body to `<base_url><its path>`; resolves once a 2xx status and headers arrived, with
   * the body still streaming. `extraHeaders`: the client's own headers of the upstream's dialect (pass-through),
   * which override the auth hook's defaults of the same name (`anthropic-version`).
   */
  async post(
    operation: UpstreamOperation,
    upstreamModel: string,
    body: string | FormData,
    signal: AbortSignal,
    contentType?: string,
    extraHeaders?: Readonly<Record<string, string>>,
  ): Promise<UpstreamResponse> {
    const path = this.basePath + this.hooks.path(operation, upstreamModel);
    const headers: Record<string, string> = { accept: 'application/json, text/event-stream, */*' };
    if (contentType) headers['content-type'] = contentType;
    Object.assign(headers, this.hooks.auth.headers({ method: 'POST', path, body }), extraHeaders);
    // While traces are on: this attempt's client span, and its traceparent sent upstream (src/tracing/).
    const span = startUpstreamSpan(this.name, 'POST', this.origin + path);
    span?.propagate(headers);
    let answer: Dispatcher.ResponseData;
    try {
      answer = await this.pool.request({ method: 'POST', path, headers, body, signal });
    } catch (err) {
      const failure = beforeHeaders(toUpstreamFailure(this.name, err));
      span?.failed(failure.kind, failure.message);
      throw failure;
    }
    span?.answered(answer.statusCode, answer.body);
    // undici reports a body destroyed before its end (by us, or by the upstream's reset) as an 'error' event;
    // readers see it through their iterator, and this listener keeps a body nobody reads any more from
    // turning it into an uncaught exception.
    answer.body.on('error', () => undefined);
    const responseType = String(answer.headers['content-type'] ?? '');
    if (answer.statusCode >= 200 && answer.statusCode < 300) {
      return { contentType: responseType, headers: answer.headers, body: answer.body };
    }
    const { message, quotaSpent, parsed } = await readError(answer.body).catch(() => ({ message: '', quotaSpent: false, parsed: undefined }));
    // The gateway's own key refused: the operator's to fix, never the client's (DESIGN.md section 12.3).
    if (answer.statusCode === 401 || answer.statusCode === 403 || this.hooks.refusesCredentials?.(answer.statusCode, parsed)) {
      throw new CredentialsRefused(this.name, answer.statusCode, errorCode(parsed));
    }
    const detail = this.hooks.errorMessage?.(answer.statusCode, parsed) || message || `HTTP ${answer.statusCode}`;
    // OpenAI's 429 insufficient_quota: the deployment's own account is out of credits, not rate limited. The
    // request is not at fault and waiting does not help: the upstream failed (502, another deployment tried,
    // counted by the circuit), rather than a 429 that clients and SDKs would retry (docs/errors.md).
    if (answer.statusCode === 429 && quotaSpent) {
      throw new UpstreamFailure('server_error', `Upstream ${this.name} has run out of quota: ${detail}`, 429);
    }
    if (answer.statusCode === 429) {
      throw new UpstreamFailure('rejected', detail, 429, false, retryAfterSeconds(answer.headers['retry-after']));
    }
    if (answer.statusCode >= 400 && answer.statusCode < 500) {
      throw new UpstreamFailure('rejected', detail, answer.statusCode);
    }
    throw new UpstreamFailure('server_error', `Upstream ${this.name} failed: ${detail}`, answer.statusCode);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** Retry-After as seconds (delay-seconds or an HTTP date: RFC 9110 section 10.2.3); null when absent or unreadable. */
function retryAfterSeconds(header: string | string[] | undefined): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return null;
  const seconds = /^\d+$/.test(value.trim()) ? Number(value) : (Date.parse(value) - Date.now()) / 1000;
  return Number.isFinite(seconds) ? Math.max(0, seconds) : null;
}

/** Reads a whole (small) JSON body; a body that is not JSON is a bad_response. */
export async function readJsonBody(name: string, body: Readable): Promise<Record<string, unknown>> {
  let text: string;
  try {
    const read = await collect(body, MAX_JSON_ANSWER_BYTES);
    text = read.text;
    if (!read.complete) throw new UpstreamFailure('bad_response', `Upstream ${name} sent an answer over ${MAX_JSON_ANSWER_BYTES} bytes.`);
  } catch (err) {
    throw toUpstreamFailure(name, err);
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new UpstreamFailure('bad_response', `Upstream ${name} sent a malformed answer (not a JSON object).`);
}

export function toUpstreamFailure(name: string, err: unknown): UpstreamFailure {
  if (err instanceof UpstreamFailure) return err;
  const error = err as Error & { code?: string; cause?: { code?: string } };
  const code = error.code ?? error.cause?.code ?? '';
  if (error.name === 'AbortError' || code === 'ABORT_ERR') {
    return new UpstreamFailure('bad_response', `Request to upstream ${name} aborted.`);
  }
  if (err instanceof errors.ConnectTimeoutError || ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'].includes(code)) {
    return new UpstreamFailure('unreachable', `Upstream ${name} is unreachable (${code || error.message}).`);
  }
  if (err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError) {
    return new UpstreamFailure('timeout', `Upstream ${name} did not answer in time.`);
  }
  return new UpstreamFailure('bad_response', `Connection to upstream ${name} broke: ${error.message}`);
}

/** Stops reading a body and closes its connection, without an uncaught 'error' event. */
export function discardBody(body: Readable): void {
  if (body.listenerCount('error') === 0) body.on('error', () => undefined);
  if (!body.destroyed) body.destroy();
}

/** The body as text, up to `limit` bytes: `complete` is false (and the rest discarded) when it is longer. */
async function collect(body: Readable, limit: number): Promise<{ text: string; complete: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let complete = true;
  for await (const chunk of body.iterator({ destroyOnReturn: false })) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      complete = false;
      discardBody(body);
      break;
    }
    chunks.push(chunk as Buffer);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), complete };
}

/** The upstream's error message: OpenAI's `{error: {message}}` (Anthropic's `{type: "error", error: {type, message}}` too), or the text itself. */
async function readError(body: Readable): Promise<{ message: string; quotaSpent: boolean; parsed: unknown }> {
  // A longer error body is cut: its start carries the message.
  const text = (await collect(body, MAX_ERROR_BODY_BYTES)).text.trim();
  let parsed: { error?: { message?: unknown; type?: unknown; code?: unknown } | string; message?: unknown } | null;
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    // not JSON: use the text
    return { message: text.slice(0, 500), quotaSpent: false, parsed: undefined };
  }
  if (!parsed || typeof parsed !== 'object') return { message: text.slice(0, 500), quotaSpent: false, parsed };
  if (typeof parsed.error === 'string') return { message: parsed.error, quotaSpent: false, parsed };
  const quotaSpent = parsed.error?.code === 'insufficient_quota' || parsed.error?.type === 'insufficient_quota';
  if (typeof parsed.error?.message === 'string') return { message: parsed.error.message, quotaSpent, parsed };
  if (typeof parsed.message === 'string') return { message: parsed.message, quotaSpent, parsed };
  return { message: text.slice(0, 500), quotaSpent, parsed };
}

/** The upstream's error code or type (`invalid_api_key`, `authentication_error`, `PERMISSION_DENIED`): a short name, never its message. */
function errorCode(parsed: unknown): string | null {
  const error = (parsed as { error?: unknown } | undefined)?.error;
  if (!error || typeof error !== 'object') return null;
  const { code, type, status } = error as Record<string, unknown>;
  const name = [code, type, status].find((value) => typeof value === 'string' || typeof value === 'number');
  return name !== undefined && /^[A-Za-z0-9_.-]{1,64}$/.test(String(name)) ? String(name) : null;
}
