import { randomUUID } from 'node:crypto';
import { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/core/serde';
import { FakeServer, parseJson, readAll, sleep, splitUrl, write } from './fake-server';
import { promptPoints, RequestError, servedTier, validateBody } from './fake-bedrock-request';
import { checkSignature } from './fake-bedrock-sigv4';
import { fitToolCalls, tokenGroups, tokenPieces } from './fake-tokens';

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
 * - Usage: input tokens by the fakes' tokenizer (`fakeTokenCount`, fake-tokens.ts), over tools, system and
 *   messages; each cachePoint caches the prompt up to it (5 minutes): its first request writes
 *   (`cacheWriteInputTokens`), later ones read (`cacheReadInputTokens`); `inputTokens` is what follows the last.
 * - Service tiers: `serviceTier: {type}` checked as Bedrock checks its members (ValidationException), and the tier
 *   that served the request reported as `serviceTier` in Converse's answer and in ConverseStream's metadata event.
 */

const ERROR_NAMESPACE = 'http://internal.amazon.com/coral/com.amazon.bedrock/';
const CACHE_TTL_MS = 5 * 60_000;

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


export class FakeBedrock extends FakeServer<BedrockRecordedRequest, BedrockFailureMode> {
  protected readonly label = 'fake bedrock';
  region = 'us-east-1';
  accessKeyId = 'AKIAFAKEBEDROCK00001';
  secretAccessKey = 'fake/bedrock/secret/key/0123456789abcdefghij';
  /** Models served; any other is 404 ResourceNotFoundException. */
  models = new Set(FakeBedrock.defaultModels());
  reply: BedrockReply = FakeBedrock.defaultReply();
  failureMessage = 'The fake Bedrock runtime rejected this request.';
  exceptionEventType: StreamExceptionType = 'modelStreamErrorException';
  now: () => number = () => Date.now();
  /** The prompt cache: prefix hash → expiry (ms on `now()`). */
  readonly cache = new Map<string, number>();
  private readonly codec = new EventStreamCodec(toUtf8, fromUtf8);

  static defaultReply(): BedrockReply {
    return { text: 'Hello from the fake Bedrock runtime.' };
  }

  static defaultModels(): string[] {
    return ['anthropic.claude-sonnet-4-5-20250929-v1:0', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'anthropic.claude-3-5-haiku-20241022-v1:0', 'amazon.nova-pro-v1:0', 'meta.llama3-1-70b-instruct-v1:0'];
  }

  resetState(): void {
    super.resetState();
    this.cache.clear();
    this.reply = FakeBedrock.defaultReply();
    this.models = new Set(FakeBedrock.defaultModels());
    this.exceptionEventType = 'modelStreamErrorException';
    this.failureMessage = 'The fake Bedrock runtime rejected this request.';
    this.now = () => Date.now();
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

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBytes = await readAll(req);
    const raw = rawBytes.toString('utf8');
    const { path, query: search } = splitUrl(req.url);
    const query = search.slice(1);
    const route = /^\/model\/([^/]+)\/(converse|converse-stream)$/.exec(path);
    const record: BedrockRecordedRequest = {
      method: req.method ?? '',
      path,
      modelId: route ? safeDecode(route[1]) : '',
      operation: route ? (route[2] as 'converse' | 'converse-stream') : null,
      headers: req.headers,
      rawBody: raw,
      body: parseJson(raw),
      signatureValid: null,
      aborted: false,
      finished: false,
    };
    const destroy = this.track(record, req, res);
    res.setHeader('x-amzn-RequestId', randomUUID());
    const fail = (status: number, type: string, message: string) => sendError(res, status, type, message);

    try {
      await checkSignature(req, { path, query, body: rawBytes }, this, record);
    } catch (err) {
      if (err instanceof RequestError) return fail(err.status, err.type, err.message);
      throw err;
    }
    const mode = this.nextMode(record.modelId);
    if (mode === 'hang') return;
    if (mode === 'reset') return destroy();
    await this.gate.passed();
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
      const answer = JSON.stringify({ output: { message: { role: 'assistant', content: output.blocks } }, stopReason: output.stopReason, usage, metrics: { latencyMs: 42 }, serviceTier: { type: servedTier(body) } });
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
    events.push(['metadata', { usage, metrics: { latencyMs: 42 }, serviceTier: { type: servedTier(body) } }]);

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
      const tools = fitToolCalls(reply.toolUses ?? [], budget);
      for (const tool of tools.fitted) blocks.push({ toolUse: { toolUseId: tool.toolUseId, name: tool.name, input: tool.input } });
      [budget, cut] = [tools.left, tools.cut];
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

// ---- helpers ----

/** The text in pieces of two tokens each (how the stream's deltas cut it). */
const pieces = (text: string) => tokenGroups(text, 2);

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}


/** An error as Bedrock (a restJson1 service) sends it: its name in x-amzn-ErrorType, its message in the body. */
function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  const body = JSON.stringify({ message });
  res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-ErrorType': `${type}:${ERROR_NAMESPACE}`, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
