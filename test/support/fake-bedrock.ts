import { createHash, randomUUID } from 'node:crypto';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { HttpRequest } from '@smithy/core/protocols';
import { fromUtf8, Hash, toUtf8 } from '@smithy/core/serde';
import { SignatureV4 } from '@smithy/signature-v4';
import { fakeTokenCount } from './fake-anthropic';

/**
 * A fake Amazon Bedrock runtime over real HTTP on 127.0.0.1 (give `fake.url` as the SDK's `endpoint` or the
 * provider's `base_url`), written from AWS's documentation of the Converse and ConverseStream APIs
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html, …_ConverseStream.html),
 * of Signature Version 4 (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html),
 * of the event-stream encoding (https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream),
 * of prompt caching (https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html) and of the
 * errors the service answers; its frames are encoded with the SDK's own codec (@smithy/core/event-streams).
 *
 * - `POST /model/{modelId}/converse` (JSON) and `POST /model/{modelId}/converse-stream`
 *   (`application/vnd.amazon.eventstream`: one binary message per event, headers `:event-type`,
 *   `:content-type: application/json`, `:message-type: event`; an exception as `:message-type: exception` with
 *   `:exception-type`). Every event's JSON carries Bedrock's padding field `p`.
 * - Every request's SigV4 signature is recomputed from the received method, path, query, signed headers and
 *   body, with `fake.accessKeyId` / `fake.secretAccessKey`: an unknown key id is 403 UnrecognizedClientException,
 *   a wrong signature 403 InvalidSignatureException with the canonical request AWS expected.
 * - Errors as Bedrock sends them: `x-amzn-ErrorType: <Name>:http://internal.amazon.com/coral/com.amazon.bedrock/`
 *   and `{"message": …}`; bodies Bedrock refuses are 400 ValidationException; a model outside `fake.models` is
 *   404 ResourceNotFoundException.
 * - Usage: input tokens by the fake tokenizer of fake-anthropic.ts (`fakeTokenCount`), over tools, system and
 *   messages; each cachePoint caches the prompt up to it (5 minutes): its first request writes
 *   (`cacheWriteInputTokens`), later ones read (`cacheReadInputTokens`); `inputTokens` is what follows the last.
 */

const ERROR_NAMESPACE = 'http://internal.amazon.com/coral/com.amazon.bedrock/';
const CACHE_TTL_MS = 5 * 60_000;
const MAX_CACHE_POINTS = 4;

export type BedrockFailureMode =
  | 'throttling' // 429 ThrottlingException
  | 'serviceUnavailable' // 503 ServiceUnavailableException
  | 'internalServer' // 500 InternalServerException
  | 'validation' // 400 ValidationException carrying `failureMessage`
  | 'accessDenied' // 403 AccessDeniedException
  | 'exceptionEvent' // a stream: N events (default: half), then an exception event (`exceptionEventType`); JSON: 500
  | 'cutStream' // a stream: N events (default: half), then half a frame and the socket destroyed; JSON: half a body
  | 'reset' // the socket is destroyed before any answer
  | 'hang'; // never answers

const SCRIPTED: Partial<Record<BedrockFailureMode, { status: number; type: string; message: string }>> = {
  throttling: { status: 429, type: 'ThrottlingException', message: 'Too many requests, please wait before trying again.' },
  serviceUnavailable: { status: 503, type: 'ServiceUnavailableException', message: 'Bedrock is unable to process your request.' },
  internalServer: { status: 500, type: 'InternalServerException', message: 'The server encountered an internal error while processing the request.' },
  accessDenied: { status: 403, type: 'AccessDeniedException', message: "You don't have access to the model with the specified model ID." },
};

/** The exception events ConverseStream documents, with the message each carries here. */
export type StreamExceptionType = 'modelStreamErrorException' | 'throttlingException' | 'internalServerException' | 'serviceUnavailableException' | 'validationException';

/** The fake's answer to the next requests. */
export interface BedrockReply {
  /** The text block ('' for none: an answer of toolUse blocks only). */
  text: string;
  /** A reasoningContent block before the text (Claude's thinking). */
  reasoning?: { text: string; signature: string };
  /** toolUse blocks after the text; streamed as contentBlockStart + toolUse.input pieces. */
  toolUses?: { toolUseId: string; name: string; input: Record<string, unknown> }[];
  /** The stop reason when neither maxTokens nor a stop sequence cut the answer; default tool_use with tool uses, else end_turn. */
  stopReason?: 'end_turn' | 'tool_use' | 'guardrail_intervened' | 'content_filtered';
}

export interface BedrockUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cacheReadInputTokens: number;
  cacheWriteInputTokens: number;
}

export interface BedrockRecordedRequest {
  method: string;
  /** The path as received (the model id percent-encoded), without the query. */
  path: string;
  /** The model id, decoded. */
  modelId: string;
  operation: 'converse' | 'converse-stream' | null;
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** The parsed JSON body; undefined when it did not parse. */
  body: any;
  /** Whether the SigV4 signature matched (null: no Authorization header). */
  signatureValid: boolean | null;
  /** What the fake answered on a 200 (the usage holds the cache figures it computed). */
  answered?: { usage: BedrockUsage; stopReason: string; content: unknown[] };
  /** The client closed the connection before the answer was complete. */
  aborted: boolean;
  finished: boolean;
}

class RequestError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const bad = (message: string) => new RequestError(400, 'ValidationException', message);

/** SigV4's canonical request, as the fake recomputes it (for the message AWS gives on a mismatch). */
class CheckingSigner extends SignatureV4 {
  canonicalRequestOf(request: HttpRequest, signedHeaders: string[], payloadHash: string): string {
    const canonical: Record<string, string> = {};
    for (const name of signedHeaders) canonical[name] = String(request.headers[name] ?? '').trim().replace(/\s+/g, ' ');
    return this.createCanonicalRequest(request, canonical, payloadHash);
  }
}

export class FakeBedrock {
  url = '';
  region = 'us-east-1';
  accessKeyId = 'AKIAFAKEBEDROCK00001';
  secretAccessKey = 'fake/bedrock/secret/key/0123456789abcdefghij';
  /** Models served; any other is 404 ResourceNotFoundException. */
  models = new Set(FakeBedrock.defaultModels());
  reply: BedrockReply = FakeBedrock.defaultReply();
  responseDelayMs = 0;
  /** Waited between stream events. */
  chunkDelayMs = 0;
  failureMessage = 'The fake Bedrock runtime rejected this request.';
  /** Good events before `cutStream` / `exceptionEvent`; null: half of the stream's events. */
  faultAfterEvents: number | null = null;
  exceptionEventType: StreamExceptionType = 'modelStreamErrorException';
  failure: BedrockFailureMode | null = null;
  now: () => number = () => Date.now();
  readonly requests: BedrockRecordedRequest[] = [];
  /** The prompt cache: prefix hash → expiry (ms on `now()`). */
  readonly cache = new Map<string, number>();
  private readonly queued: BedrockFailureMode[] = [];
  private readonly codec = new EventStreamCodec(toUtf8, fromUtf8);
  private server!: Server;

  static defaultReply(): BedrockReply {
    return { text: 'Hello from the fake Bedrock runtime.' };
  }

  static defaultModels(): string[] {
    return ['anthropic.claude-sonnet-4-5-20250929-v1:0', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'anthropic.claude-3-5-haiku-20241022-v1:0', 'amazon.nova-pro-v1:0', 'meta.llama3-1-70b-instruct-v1:0'];
  }

  failNext(mode: BedrockFailureMode, times = 1): void {
    for (let i = 0; i < times; i++) this.queued.push(mode);
  }

  resetState(): void {
    this.requests.length = 0;
    this.queued.length = 0;
    this.cache.clear();
    this.failure = null;
    this.reply = FakeBedrock.defaultReply();
    this.models = new Set(FakeBedrock.defaultModels());
    this.responseDelayMs = 0;
    this.chunkDelayMs = 0;
    this.faultAfterEvents = null;
    this.exceptionEventType = 'modelStreamErrorException';
    this.failureMessage = 'The fake Bedrock runtime rejected this request.';
    this.now = () => Date.now();
  }

  aborted(): BedrockRecordedRequest[] {
    return this.requests.filter((r) => r.aborted);
  }

  async waitFor(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error('fake bedrock: condition not met in time');
      await sleep(10);
    }
  }

  async start(port = 0): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy());
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /**
   * The input side of the usage this request would get now. The prompt is units in Bedrock's order (each tool,
   * each system block, each content block of each message); a cachePoint closes a prefix. The longest cached
   * prefix ending at a cachePoint is read; every later cachePoint writes the tokens since the previous one (or
   * since the read prefix); `inputTokens` is what follows the last cachePoint. With `write`, the prefixes are
   * cached (or refreshed) as the answer does.
   */
  usageFor(body: any, modelId: string, write = false): Pick<BedrockUsage, 'inputTokens' | 'cacheReadInputTokens' | 'cacheWriteInputTokens'> {
    const { total, points } = promptPoints(body, modelId);
    const now = this.now();
    let read = 0;
    for (const p of points) if ((this.cache.get(p.hash) ?? -1) > now) read = Math.max(read, p.end);
    let written = 0;
    let from = read;
    for (const p of points) {
      if (p.end <= from) continue;
      written += p.end - from;
      from = p.end;
    }
    if (write) for (const p of points) this.cache.set(p.hash, now + CACHE_TTL_MS);
    return { inputTokens: total - (points.at(-1)?.end ?? 0), cacheReadInputTokens: read, cacheWriteInputTokens: written };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBytes = await readAll(req);
    const raw = rawBytes.toString('utf8');
    const [path, query = ''] = (req.url ?? '').split('?');
    const route = /^\/model\/([^/]+)\/(converse|converse-stream)$/.exec(path);
    const record: BedrockRecordedRequest = {
      method: req.method ?? '',
      path,
      modelId: route ? safeDecode(route[1]) : '',
      operation: route ? (route[2] as 'converse' | 'converse-stream') : null,
      headers: req.headers,
      rawBody: raw,
      body: undefined,
      signatureValid: null,
      aborted: false,
      finished: false,
    };
    try {
      record.body = JSON.parse(raw);
    } catch {
      record.body = undefined;
    }
    this.requests.push(record);
    let destroyedByUs = false;
    res.on('close', () => {
      record.finished = res.writableFinished;
      if (!res.writableFinished && !destroyedByUs) record.aborted = true;
    });
    const destroy = () => {
      destroyedByUs = true;
      req.socket.destroy();
    };
    res.setHeader('x-amzn-RequestId', randomUUID());
    const fail = (status: number, type: string, message: string) => sendError(res, status, type, message);

    try {
      await this.checkSignature(req, path, query, rawBytes, record);
    } catch (err) {
      if (err instanceof RequestError) return fail(err.status, err.type, err.message);
      throw err;
    }
    const mode = this.queued.shift() ?? this.failure;
    if (mode === 'hang') return;
    if (mode === 'reset') return destroy();
    if (this.responseDelayMs) await sleep(this.responseDelayMs);
    if (res.destroyed) return;
    if (req.method !== 'POST' || !route) return fail(404, 'UnknownOperationException', 'Unknown operation');
    if (mode === 'validation') return fail(400, 'ValidationException', this.failureMessage);
    const scripted = mode ? SCRIPTED[mode] : undefined;
    if (scripted) return fail(scripted.status, scripted.type, scripted.message);
    if (mode === 'exceptionEvent' && record.operation === 'converse') return fail(500, 'InternalServerException', SCRIPTED.internalServer!.message);
    try {
      if (!record.body || typeof record.body !== 'object' || Array.isArray(record.body)) throw new RequestError(400, 'SerializationException', 'Unable to parse request body');
      validateBody(record.body);
      if (!this.models.has(record.modelId)) throw new RequestError(404, 'ResourceNotFoundException', 'Could not resolve the foundation model from the provided model identifier.');
    } catch (err) {
      if (err instanceof RequestError) return fail(err.status, err.type, err.message);
      throw err;
    }
    return this.answer(record, res, mode, destroy);
  }

  /** SigV4 as AWS checks it: the key id, the scope, and the signature over the canonical request. */
  private async checkSignature(req: IncomingMessage, path: string, query: string, body: Buffer, record: BedrockRecordedRequest): Promise<void> {
    const auth = String(req.headers.authorization ?? '');
    const parsed = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
    if (!auth) throw new RequestError(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
    if (!parsed) throw new RequestError(400, 'IncompleteSignatureException', `Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters. Authorization=${auth.split(' ')[0]}`);
    const [, keyId, , region, service, signedList, signature] = parsed;
    if (keyId !== this.accessKeyId) throw new RequestError(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
    if (service !== 'bedrock' || region !== this.region) {
      throw new RequestError(403, 'InvalidSignatureException', `Credential should be scoped to a valid region and to the service 'bedrock'.`);
    }
    const amzDate = String(req.headers['x-amz-date'] ?? '');
    const date = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
    if (!date) throw new RequestError(400, 'IncompleteSignatureException', 'Authorization header requires existence of either a \'X-Amz-Date\' or a \'Date\' header.');
    const signedHeaders = signedList.split(';');
    const headers: Record<string, string> = {};
    for (const name of signedHeaders) {
      const value = req.headers[name];
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
    }
    const sessionToken = headers['x-amz-security-token'];
    const signer = new CheckingSigner({
      service: 'bedrock',
      region: this.region,
      credentials: { accessKeyId: this.accessKeyId, secretAccessKey: this.secretAccessKey, ...(sessionToken && { sessionToken }) },
      sha256: Hash.bind(null, 'sha256'),
    });
    const request = new HttpRequest({ method: req.method, protocol: 'http:', hostname: '127.0.0.1', path, query: parseQuery(query), headers, body });
    const signingDate = new Date(Date.UTC(+date[1], +date[2] - 1, +date[3], +date[4], +date[5], +date[6]));
    const signed = await signer.sign(request, { signingDate });
    const expected = /Signature=([0-9a-f]{64})/.exec(String(signed.headers.authorization))?.[1];
    const expectedList = /SignedHeaders=([^,]+)/.exec(String(signed.headers.authorization))?.[1];
    record.signatureValid = expected === signature && expectedList === signedList;
    if (!record.signatureValid) {
      const payloadHash = createHash('sha256').update(body).digest('hex');
      const canonical = signer.canonicalRequestOf(request, signedHeaders, payloadHash);
      throw new RequestError(
        403,
        'InvalidSignatureException',
        `The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.\n\nThe Canonical String for this request should have been\n'${canonical}'\n`,
      );
    }
  }

  private async answer(record: BedrockRecordedRequest, res: ServerResponse, mode: BedrockFailureMode | null, destroy: () => void): Promise<void> {
    const body = record.body;
    const output = this.outputFor(body);
    const input = this.usageFor(body, record.modelId, true);
    const usage: BedrockUsage = {
      ...input,
      outputTokens: output.outputTokens,
      totalTokens: input.inputTokens + input.cacheReadInputTokens + input.cacheWriteInputTokens + output.outputTokens,
    };
    record.answered = { usage, stopReason: output.stopReason, content: output.blocks };
    if (record.operation === 'converse') {
      const answer = JSON.stringify({ output: { message: { role: 'assistant', content: output.blocks } }, stopReason: output.stopReason, usage, metrics: { latencyMs: 42 } });
      if (mode === 'cutStream') {
        res.writeHead(200, { 'content-type': 'application/json' });
        await write(res, Buffer.from(answer.slice(0, Math.floor(answer.length / 2))));
        return destroy();
      }
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
      res.end(answer);
      return;
    }

    const events: [string, Record<string, unknown>][] = [['messageStart', { role: 'assistant' }]];
    output.blocks.forEach((block: any, index) => {
      const delta = (d: Record<string, unknown>) => events.push(['contentBlockDelta', { contentBlockIndex: index, delta: d }]);
      if (block.reasoningContent) {
        for (const piece of pieces(block.reasoningContent.reasoningText.text)) delta({ reasoningContent: { text: piece } });
        delta({ reasoningContent: { signature: block.reasoningContent.reasoningText.signature } });
      } else if (typeof block.text === 'string') {
        for (const piece of pieces(block.text)) delta({ text: piece });
      } else if (block.toolUse) {
        events.push(['contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId: block.toolUse.toolUseId, name: block.toolUse.name } } }]);
        const json = JSON.stringify(block.toolUse.input);
        const size = Math.ceil(json.length / 3);
        for (let start = 0; start < json.length; start += size) delta({ toolUse: { input: json.slice(start, start + size) } });
      }
      events.push(['contentBlockStop', { contentBlockIndex: index }]);
    });
    events.push(['messageStop', { stopReason: output.stopReason }]);
    events.push(['metadata', { usage, metrics: { latencyMs: 42 } }]);

    res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
    const faultAt = mode === 'cutStream' || mode === 'exceptionEvent' ? Math.min(this.faultAfterEvents ?? Math.floor(events.length / 2), events.length) : Infinity;
    for (let i = 0; i < events.length; i++) {
      if (res.destroyed) return;
      if (i > 0 && this.chunkDelayMs) await sleep(this.chunkDelayMs);
      if (res.destroyed) return;
      if (i === faultAt && mode === 'cutStream') {
        const frame = this.eventFrame(...events[i]);
        await write(res, frame.subarray(0, Math.floor(frame.length / 2)));
        return destroy();
      }
      if (i === faultAt) {
        res.end(this.exceptionFrame(this.exceptionEventType, { message: 'The fake model failed while streaming.', originalStatusCode: 500, originalMessage: 'Internal error' }));
        return;
      }
      await write(res, this.eventFrame(...events[i]));
    }
    res.end();
  }

  private eventFrame(type: string, data: Record<string, unknown>): Uint8Array {
    return this.codec.encode({
      headers: {
        ':event-type': { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
        ':message-type': { type: 'string', value: 'event' },
      },
      // Bedrock pads every event with `p` so that its length tells nothing of its content.
      body: fromUtf8(JSON.stringify({ ...data, p: 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ'.slice(0, 1 + (JSON.stringify(data).length % 30)) })),
    });
  }

  private exceptionFrame(type: StreamExceptionType, data: Record<string, unknown>): Uint8Array {
    return this.codec.encode({
      headers: {
        ':exception-type': { type: 'string', value: type },
        ':content-type': { type: 'string', value: 'application/json' },
        ':message-type': { type: 'string', value: 'exception' },
      },
      body: fromUtf8(JSON.stringify(data)),
    });
  }

  /** The answer's blocks, cut by the request's stopSequences and maxTokens, with its stop reason and output tokens. */
  private outputFor(body: any): { blocks: unknown[]; stopReason: string; outputTokens: number } {
    const reply = this.reply;
    const limit: number = body.inferenceConfig?.maxTokens ?? 4096;
    let budget = limit;
    let cut = false;
    const take = (text: string): string => {
      const all = tokenPieces(text);
      if (all.length <= budget) {
        budget -= all.length;
        return text;
      }
      cut = true;
      const kept = all.slice(0, budget).join('');
      budget = 0;
      return kept;
    };
    const blocks: unknown[] = [];
    if (reply.reasoning) blocks.push({ reasoningContent: { reasoningText: { text: take(reply.reasoning.text), signature: reply.reasoning.signature } } });
    let stopped = false;
    if (!cut && reply.text) {
      let text = reply.text;
      for (const s of (body.inferenceConfig?.stopSequences ?? []) as string[]) {
        const at = text.indexOf(s);
        if (at >= 0) {
          text = text.slice(0, at);
          stopped = true;
        }
      }
      text = take(text);
      if (text) blocks.push({ text });
    }
    if (!cut && !stopped) {
      for (const tool of reply.toolUses ?? []) {
        const n = fakeTokenCount(tool.name) + fakeTokenCount(JSON.stringify(tool.input));
        if (n > budget) {
          cut = true;
          break;
        }
        budget -= n;
        blocks.push({ toolUse: { toolUseId: tool.toolUseId, name: tool.name, input: tool.input } });
      }
    }
    if (cut) return { blocks, stopReason: 'max_tokens', outputTokens: limit };
    const used = Math.max(1, limit - budget);
    if (stopped) return { blocks, stopReason: 'stop_sequence', outputTokens: used };
    return { blocks, stopReason: reply.stopReason ?? (reply.toolUses?.length ? 'tool_use' : 'end_turn'), outputTokens: used };
  }
}

export async function startFakeBedrock(port = 0): Promise<FakeBedrock> {
  return new FakeBedrock().start(port);
}

// ---- validation, as Bedrock answers (400 ValidationException; wording from its answers) ----

function validateBody(body: any): void {
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw bad('A conversation must start with a user message. Try again with a conversation that starts with a user message.');
  const config = body.inferenceConfig ?? {};
  if (config.maxTokens !== undefined && (!Number.isInteger(config.maxTokens) || config.maxTokens < 1)) {
    throw bad(`1 validation error detected: Value '${config.maxTokens}' at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1`);
  }
  if (config.temperature !== undefined && (typeof config.temperature !== 'number' || config.temperature < 0 || config.temperature > 1)) {
    throw bad(`1 validation error detected: Value '${config.temperature}' at 'inferenceConfig.temperature' failed to satisfy constraint: Member must have value less than or equal to 1`);
  }
  if (config.stopSequences !== undefined && (!Array.isArray(config.stopSequences) || config.stopSequences.some((s: unknown) => typeof s !== 'string' || s === ''))) {
    throw bad("1 validation error detected: Value at 'inferenceConfig.stopSequences' failed to satisfy constraint: Member must satisfy constraint: [Member must have length greater than or equal to 1]");
  }
  if (body.system !== undefined && !Array.isArray(body.system)) throw bad('The system field must be a list of SystemContentBlock objects.');
  let usesTools = false;
  messages.forEach((m: any, i: number) => {
    if (m?.role !== 'user' && m?.role !== 'assistant') throw bad(`1 validation error detected: Value '${m?.role}' at 'messages.${i + 1}.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]`);
    if (i === 0 && m.role !== 'user') throw bad('A conversation must start with a user message. Try again with a conversation that starts with a user message.');
    if (i > 0 && messages[i - 1].role === m.role) throw bad('A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.');
    if (!Array.isArray(m.content) || m.content.length === 0) throw bad(`The content field in the Message object at messages.${i} is empty. Add a ContentBlock object to the content field and try again.`);
    m.content.forEach((b: any, j: number) => {
      const kinds = Object.keys(b ?? {});
      if (kinds.length !== 1) throw bad(`The ContentBlock object at messages.${i}.content.${j} must set one of the following keys: text, image, toolUse, toolResult, document, video, cachePoint, reasoningContent.`);
      if ('text' in b && (typeof b.text !== 'string' || b.text.trim() === '')) {
        throw bad(`The text field in the ContentBlock object at messages.${i}.content.${j} is blank. Add text to the text field, and try again.`);
      }
      if ('image' in b) {
        if (!['png', 'jpeg', 'gif', 'webp'].includes(b.image?.format)) throw bad(`1 validation error detected: Value '${b.image?.format}' at 'messages.${i + 1}.member.content.${j + 1}.member.image.format' failed to satisfy constraint: Member must satisfy enum value set: [gif, jpeg, png, webp]`);
        if (typeof b.image.source?.bytes !== 'string' || b.image.source.bytes === '') throw bad(`The image at messages.${i}.content.${j} has no bytes.`);
      }
      if ('toolUse' in b || 'toolResult' in b) usesTools = true;
      if ('toolUse' in b && (typeof b.toolUse?.toolUseId !== 'string' || typeof b.toolUse.name !== 'string' || typeof b.toolUse.input !== 'object')) {
        throw bad(`The toolUse block at messages.${i}.content.${j} needs toolUseId, name and input.`);
      }
      if ('cachePoint' in b && b.cachePoint?.type !== 'default') throw bad(`1 validation error detected: Value at 'messages.${i + 1}.member.content.${j + 1}.member.cachePoint.type' failed to satisfy constraint: Member must satisfy enum value set: [default]`);
    });
    // Every toolUse of an assistant turn is answered by a toolResult in the next user turn.
    const uses = m.content.filter((b: any) => b?.toolUse).map((b: any) => b.toolUse.toolUseId);
    const next = messages[i + 1];
    if (m.role === 'assistant' && uses.length && next) {
      const results = new Set(next.content?.filter?.((b: any) => b?.toolResult).map((b: any) => b.toolResult.toolUseId) ?? []);
      const missing = uses.filter((id: string) => !results.has(id));
      if (missing.length) throw bad(`Expected toolResult blocks at messages.${i + 1}.content for the following Ids: ${missing.join(', ')}`);
    }
  });
  const tools = body.toolConfig?.tools;
  if (body.toolConfig !== undefined) {
    if (!Array.isArray(tools) || tools.length === 0) throw bad("1 validation error detected: Value '[]' at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1");
    tools.forEach((t: any, i: number) => {
      if (t?.cachePoint) return;
      const name = t?.toolSpec?.name;
      if (typeof name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(name)) throw bad(`1 validation error detected: Value '${name}' at 'toolConfig.tools.${i + 1}.member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+`);
      if (typeof t.toolSpec.inputSchema?.json !== 'object') throw bad(`The toolSpec at toolConfig.tools.${i} needs an inputSchema with json.`);
    });
    const choice = body.toolConfig.toolChoice;
    if (choice?.tool && !tools.some((t: any) => t?.toolSpec?.name === choice.tool.name)) throw bad(`The tool ${choice.tool.name} named in toolChoice is not in toolConfig.tools.`);
  }
  if (usesTools && body.toolConfig === undefined) throw bad('The toolConfig field must be defined when using toolUse and toolResult content blocks.');
  const thinking = body.additionalModelRequestFields?.thinking;
  if (thinking?.type === 'enabled') {
    if (!Number.isInteger(thinking.budget_tokens) || thinking.budget_tokens < 1024) throw bad('The model returned the following errors: thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
    if ((config.maxTokens ?? 4096) <= thinking.budget_tokens) throw bad('The model returned the following errors: `max_tokens` must be greater than `thinking.budget_tokens`.');
    if (config.temperature !== undefined && config.temperature !== 1) throw bad('The model returned the following errors: `temperature` may only be set to 1 when thinking is enabled.');
  }
  const points = promptPoints(body).points.length;
  if (points > MAX_CACHE_POINTS) throw bad(`The number of cachePoint blocks in the request exceeds the maximum of ${MAX_CACHE_POINTS}. Found ${points}.`);
}

/** The prompt's tokens and its cache points (each with the token count and hash of the prompt up to it), in Bedrock's order: tools, system, messages. */
function promptPoints(body: any, modelId = ''): { total: number; points: { end: number; hash: string }[] } {
  let hash = createHash('sha256').update(`model:${modelId}`).digest('hex');
  let total = 0;
  const points: { end: number; hash: string }[] = [];
  const add = (unit: any, text: string) => {
    if (unit?.cachePoint) {
      points.push({ end: total, hash });
      return;
    }
    hash = createHash('sha256').update(hash).update(JSON.stringify(unit)).digest('hex');
    total += fakeTokenCount(text);
  };
  for (const tool of body.toolConfig?.tools ?? []) add(tool, JSON.stringify(tool?.toolSpec ?? {}));
  for (const block of Array.isArray(body.system) ? body.system : []) add(block, String(block?.text ?? ''));
  for (const m of Array.isArray(body.messages) ? body.messages : []) {
    hash = createHash('sha256').update(hash).update(`role:${m?.role}`).digest('hex');
    for (const block of Array.isArray(m?.content) ? m.content : []) {
      const text = typeof block?.text === 'string' ? block.text : block?.image ? 'image' : JSON.stringify(block);
      add(block, text);
    }
  }
  return { total, points };
}

// ---- helpers ----

/** The text in pieces of two tokens each (how the stream's deltas cut it). */
function pieces(text: string): string[] {
  const all = tokenPieces(text);
  const out: string[] = [];
  for (let i = 0; i < all.length; i += 2) out.push(all.slice(i, i + 2).join(''));
  return out;
}

/** The fake tokenizer's tokens with the whitespace before each: they concatenate back to the text. */
function tokenPieces(text: string): string[] {
  const found: string[] = [...(text.match(/\s*(?:[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_])/gu) ?? [])];
  const rest = text.slice(found.join('').length);
  if (rest && found.length) found[found.length - 1] += rest;
  return found;
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function parseQuery(query: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(query)) out[k] = v;
  return out;
}

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function write(res: ServerResponse, data: Uint8Array): Promise<boolean> {
  return new Promise((resolve) => res.write(data, (err) => resolve(!err)));
}

/** An error as Bedrock (a restJson1 service) sends it: its name in x-amzn-ErrorType, its message in the body. */
function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  const body = JSON.stringify({ message });
  res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-ErrorType': `${type}:${ERROR_NAMESPACE}`, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
