import type { Readable } from 'node:stream';
import {
  ChatRequestBody,
  ChatUpstream,
  PassThrough,
  SpeechUpstream,
  TokenCountUpstream,
  SpeechAudio,
  SpeechInput,
  TranscriptionInput,
  TranscriptionUpstream,
  UpstreamChatJson,
  UpstreamChatStream,
  VerboseTranscription,
} from '../providers/upstream-provider';
import type { ChatChunk } from '../providers/chat-contract';
import type { Deployment } from './deployment';

/** A chat deployment's provider: chat, and its own token count where it has one. */
type ChatCalls = ChatUpstream & Partial<TokenCountUpstream>;

/** One kind of upstream call, sent to a chosen deployment (whose provider serves U). Module constants: nothing allocated per request. */
export interface Operation<U, I, T> {
  send(deployment: Deployment<U>, input: I, signal: AbortSignal): Promise<T>;
  /** For an answer that streams on: calls `release` once its body has ended, however it ends. */
  holdUntilEnd?(answer: T, release: () => void): T;
}

/** The body as this deployment's upstream must see it: its own upstream_model. */
function bodyFor(deployment: Deployment<ChatCalls>, body: ChatRequestBody): ChatRequestBody {
  const upstreamModel = deployment.entry.upstream_model;
  return body.model === upstreamModel ? body : { ...body, model: upstreamModel };
}

export const CHAT: Operation<ChatCalls, ChatRequestBody, UpstreamChatJson> = {
  send: (d, body, signal) => d.upstream.chat(d.entry, bodyFor(d, body), signal),
};

export const CHAT_STREAM: Operation<ChatCalls, ChatRequestBody, UpstreamChatStream> = {
  send: (d, body, signal) => d.upstream.chatStream(d.entry, bodyFor(d, body), signal),
  holdUntilEnd: (chunks, release) => releasedAtEnd(chunks, release),
};

/** Messages' count_tokens: the client's body for an upstream that counts (Anthropic's), and the gateway's own count. */
export interface TokenCountInput {
  request: PassThrough;
  /** The gateway's tokenizer count, for a deployment whose provider does not count (a mixed model's other ones). */
  counted(): Promise<number>;
}

export const COUNT_TOKENS: Operation<ChatCalls, TokenCountInput, Record<string, unknown>> = {
  send: (d, { request, counted }, signal) =>
    d.upstream.countTokens ? d.upstream.countTokens(d.entry, request, signal) : counted().then((n) => ({ input_tokens: n })),
};

export const TRANSCRIBE: Operation<TranscriptionUpstream, TranscriptionInput, VerboseTranscription> = {
  // The upload is a Buffer the gateway holds: each attempt sends it whole again.
  send: (d, input, signal) => d.upstream.transcribe(d.entry, input, signal),
};

export const SPEECH: Operation<SpeechUpstream, SpeechInput, SpeechAudio> = {
  send: (d, input, signal) => d.upstream.speech(d.entry, input, signal),
  holdUntilEnd: (audio, release) => {
    onceClosed(audio.body, release);
    return audio;
  },
};

/**
 * The chunks as they come, with `release` called once when they end, fail or the reader stops. Not an async
 * generator: a `yield*` would add its own promises and microtask hops to every chunk of every stream.
 */
function releasedAtEnd(chunks: UpstreamChatStream, release: () => void): UpstreamChatStream {
  return new ReleasedAtEnd(chunks[Symbol.asyncIterator](), release);
}

class ReleasedAtEnd implements AsyncIterableIterator<ChatChunk> {
  private released = false;

  constructor(
    private readonly inner: AsyncIterator<ChatChunk>,
    private readonly release: () => void,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<ChatChunk>> {
    return this.inner.next().then(
      (result) => {
        if (result.done) this.releaseOnce();
        return result;
      },
      (err: unknown) => {
        this.releaseOnce();
        throw err;
      },
    );
  }

  /** The reader stopped early (a client that left, an error of its own): the inner stream stops, then the hold goes. */
  async return(value?: unknown): Promise<IteratorResult<ChatChunk>> {
    try {
      return this.inner.return ? await this.inner.return(value) : { done: true, value: undefined };
    } finally {
      this.releaseOnce();
    }
  }

  private releaseOnce(): void {
    if (this.released) return;
    this.released = true;
    this.release();
  }
}

function onceClosed(body: Readable, release: () => void): void {
  if (body.destroyed) release();
  else body.once('close', release);
}
