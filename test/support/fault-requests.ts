import OpenAI from 'openai';
import { FAULT_MODEL } from './fault-models';
import { GatewayProcess } from './fault-gateway';

/** No request of a fault test may hang: each has this client timeout unless it says otherwise. */
export const CLIENT_TIMEOUT_MS = 15_000;

/** What one request got, timed by the client. */
export interface Outcome {
  replica: string;
  stream: boolean;
  /** 0 when the client got no status line (network error or client timeout: see `clientError`). */
  status: number;
  /** error.code of a JSON error body, or of an in-band SSE error event. */
  code: string | null;
  errorType: string | null;
  requestId: string | null;
  retryAfter: string | null;
  /** A streamed answer that ended with `data: [DONE]`. */
  completedStream: boolean;
  /** The assistant's text (non-streamed JSON or the SSE deltas joined). */
  content: string;
  startedAt: number;
  endedAt: number;
  ms: number;
  clientError: string | null;
}

export interface ChatOptions {
  model?: string;
  stream?: boolean;
  maxTokens?: number;
  timeoutMs?: number;
  /**
   * `Connection: close`: the request's connection is not kept for a later one. A burst otherwise leaves hundreds of
   * idle keep-alive sockets in the test process's pool; on a loaded machine the next burst may reuse one just as its
   * replica's keep-alive timeout closes it ("other side closed"), a race of the client's pool, not the gateway's.
   */
  closeConnection?: boolean;
}

/** A chat completion over raw fetch, so that the status, headers and timing are all visible. */
export async function timedChat(gateway: GatewayProcess, key: string, options: ChatOptions = {}): Promise<Outcome> {
  const stream = options.stream ?? false;
  const body: Record<string, unknown> = {
    model: options.model ?? FAULT_MODEL.id,
    messages: [{ role: 'user', content: 'Say hello.' }],
    stream,
  };
  if (options.maxTokens !== undefined) body.max_tokens = options.maxTokens;
  if (stream) body.stream_options = { include_usage: true };
  const outcome: Outcome = {
    replica: gateway.name,
    stream,
    status: 0,
    code: null,
    errorType: null,
    requestId: null,
    retryAfter: null,
    completedStream: false,
    content: '',
    startedAt: Date.now(),
    endedAt: 0,
    ms: 0,
    clientError: null,
  };
  try {
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(options.closeConnection ? { connection: 'close' } : {}) },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeoutMs ?? CLIENT_TIMEOUT_MS),
    });
    outcome.status = res.status;
    outcome.requestId = res.headers.get('x-request-id');
    outcome.retryAfter = res.headers.get('retry-after');
    const text = await res.text();
    if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) readSse(text, outcome);
    else readJson(text, outcome);
  } catch (err) {
    outcome.clientError = (err as Error).name === 'TimeoutError' ? 'client timeout' : `${(err as Error).message} ${String((err as Error).cause ?? '')}`;
  }
  outcome.endedAt = Date.now();
  outcome.ms = outcome.endedAt - outcome.startedAt;
  return outcome;
}

function readJson(text: string, outcome: Outcome): void {
  try {
    const parsed = JSON.parse(text);
    outcome.code = parsed.error?.code ?? null;
    outcome.errorType = parsed.error?.type ?? null;
    outcome.content = parsed.choices?.[0]?.message?.content ?? '';
  } catch {
    outcome.code = 'unparseable_body';
  }
}

function readSse(text: string, outcome: Outcome): void {
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    const data = line.slice('data: '.length);
    if (data === '[DONE]') {
      outcome.completedStream = true;
      continue;
    }
    try {
      const event = JSON.parse(data);
      if (event.error) {
        outcome.code = event.error.code ?? 'unnamed_error';
        outcome.errorType = event.error.type ?? null;
      }
      outcome.content += event.choices?.[0]?.delta?.content ?? '';
    } catch {
      outcome.code = 'unparseable_event';
    }
  }
}

/** A GET with a client timeout; the status (0 if none came), the parsed body and the time taken. */
export async function timedGet(url: string, key?: string, timeoutMs = 5000): Promise<{ status: number; body: unknown; ms: number; code: string | null }> {
  const started = Date.now();
  try {
    const res = await fetch(url, { headers: key ? { authorization: `Bearer ${key}` } : {}, signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // /metrics and friends are text.
    }
    return { status: res.status, body, ms: Date.now() - started, code: errorCodeOf(body) };
  } catch {
    return { status: 0, body: null, ms: Date.now() - started, code: null };
  }
}

function errorCodeOf(body: unknown): string | null {
  const error = (body as { error?: { code?: unknown } } | null)?.error;
  return typeof error?.code === 'string' ? error.code : null;
}

/** The official client, as an application would use it against one replica. */
export function sdkFor(gateway: GatewayProcess, key: string, timeoutMs = CLIENT_TIMEOUT_MS): OpenAI {
  return new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0, timeout: timeoutMs });
}

/** A normal chat through the SDK (non-streamed, then streamed): throws unless both are served in full. */
export async function servesChatNormally(gateway: GatewayProcess, key: string, timeoutMs = 5000): Promise<void> {
  const client = sdkFor(gateway, key, timeoutMs);
  const answer = await client.chat.completions.create({ model: FAULT_MODEL.id, messages: [{ role: 'user', content: 'Hi' }] });
  if (!answer.choices[0]?.message?.content) throw new Error(`${gateway.name}: empty answer`);
  const stream = await client.chat.completions.create({
    model: FAULT_MODEL.id,
    messages: [{ role: 'user', content: 'Hi' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage = false;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = true;
  }
  if (!text || !usage) throw new Error(`${gateway.name}: incomplete stream (${JSON.stringify(text)}, usage ${usage})`);
}

/**
 * Polls `servesChatNormally` on a replica until it passes; resolves with the time it first passed
 * (ms since epoch), or throws with the last error after `timeoutMs`.
 */
export async function firstNormalChatAt(gateway: GatewayProcess, key: string, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  while (Date.now() < deadline) {
    try {
      await servesChatNormally(gateway, key, Math.max(500, Math.min(3000, deadline - Date.now())));
      return Date.now();
    } catch (err) {
      last = err;
      await sleep(100);
    }
  }
  throw new Error(`${gateway.name} did not serve chat normally within ${timeoutMs} ms: ${String(last)}`);
}

export interface Load {
  /** Stops sending and resolves with every outcome once the requests in flight have ended. */
  stop(): Promise<Outcome[]>;
}

/**
 * `workers` loops per replica, each sending one chat at a time (streamed and not, alternately) to
 * its replica until stopped, with `pauseMs` between requests.
 */
export function startLoad(gateways: GatewayProcess[], key: string, options: { workers?: number; pauseMs?: number } = {}): Load {
  const outcomes: Outcome[] = [];
  let running = true;
  const loops: Promise<void>[] = [];
  for (const gateway of gateways) {
    for (let w = 0; w < (options.workers ?? 2); w++) {
      loops.push(
        (async () => {
          for (let i = w; running; i++) {
            outcomes.push(await timedChat(gateway, key, { stream: i % 2 === 1 }));
            await sleep(options.pauseMs ?? 20);
          }
        })(),
      );
    }
  }
  const load: Load = {
    async stop() {
      running = false;
      unfinishedLoads.delete(load);
      await Promise.all(loops);
      return outcomes;
    },
  };
  unfinishedLoads.add(load);
  return load;
}

const unfinishedLoads = new Set<Load>();

/** Stops the loads a failed test left running (they would keep jest alive). */
export async function stopAllLoads(): Promise<void> {
  await Promise.all([...unfinishedLoads].map((l) => l.stop()));
}

/** One line per outcome group (replica, status, code), for failure messages and the timings report. */
export function summarize(outcomes: Outcome[]): string {
  const groups = new Map<string, { n: number; maxMs: number }>();
  for (const o of outcomes) {
    const key = `${o.replica} ${o.status} ${o.code ?? ''}${o.clientError ? ` (${o.clientError})` : ''}`;
    const g = groups.get(key) ?? { n: 0, maxMs: 0 };
    g.n++;
    g.maxMs = Math.max(g.maxMs, o.ms);
    groups.set(key, g);
  }
  return [...groups].map(([k, g]) => `${k}: ${g.n} (max ${g.maxMs} ms)`).join('\n');
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
