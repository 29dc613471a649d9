import type { Readable } from 'node:stream';
import type { CatalogEntry } from '../config/gateway-config.schema';
import type { ChatChunk, ChatCompletion } from './chat-contract';

/**
 * A client's request in its own dialect, for an upstream that speaks it natively (Messages in, `anthropic` up:
 * DESIGN.md section 11). Such a provider sends `body` as it came, `model` and the output limit aside; any other
 * provider serves the chat body it is attached to.
 */
export const PASS_THROUGH: unique symbol = Symbol('pass-through');

export interface PassThrough {
  dialect: 'anthropic';
  /** The client's body as sent. */
  body: Record<string, unknown>;
  /** The client's headers of that dialect the upstream must see (`anthropic-version`, `anthropic-beta`). */
  headers: Readonly<Record<string, string>>;
}

/** OpenAI chat-completion request body as sent upstream (model already mapped to upstream_model). */
export type ChatRequestBody = Record<string, unknown> & { model: string; messages: unknown[]; [PASS_THROUGH]?: PassThrough };

export interface UpstreamChatJson {
  /** The upstream's chat.completion object (an openai-compatible upstream's unchanged). */
  body: ChatCompletion;
}

/** The chunks of a streamed completion, in order; the iterable ends where the upstream's stream completed. */
export type UpstreamChatStream = AsyncIterable<ChatChunk>;

export interface TranscriptionInput {
  file: Buffer;
  filename: string;
  mimetype: string;
  language?: string;
  prompt?: string;
  temperature?: string;
}

/** The fullest transcription answer (OpenAI verbose_json shape). */
export interface VerboseTranscription {
  text: string;
  language?: string;
  duration?: number;
  segments?: unknown[];
  [extra: string]: unknown;
}

export interface SpeechInput {
  input: string;
  voice: string;
  response_format: string;
  speed: number;
}

export interface SpeechAudio {
  contentType: string;
  /** The audio as it arrives from the upstream (streamed, not buffered). */
  body: Readable;
}

/** Chat completions, JSON and streamed (catalog kind `chat`). */
export interface ChatUpstream {
  chat(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatJson>;
  chatStream(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatStream>;
}

/** Counting a Messages request's input tokens upstream (Anthropic's /v1/messages/count_tokens), for a provider that can. */
export interface TokenCountUpstream {
  countTokens(model: CatalogEntry, request: PassThrough, signal: AbortSignal): Promise<Record<string, unknown>>;
}

/** Speech to text (catalog kind `transcription`). */
export interface TranscriptionUpstream {
  transcribe(model: CatalogEntry, input: TranscriptionInput, signal: AbortSignal): Promise<VerboseTranscription>;
}

/** Text to speech (catalog kind `speech`). */
export interface SpeechUpstream {
  speech(model: CatalogEntry, input: SpeechInput, signal: AbortSignal): Promise<SpeechAudio>;
}

/**
 * One interface for every upstream, looked up in the registry by the config's provider type; made of one
 * narrow interface per kind of catalog model. Each type's config states the kinds it serves
 * (PROVIDER_CONFIGS in src/config/gateway-config.schema.ts), checked at start against every catalog entry.
 * Every method honours `signal` (abort reaches the socket or child process) and throws UpstreamFailure for
 * upstream problems.
 */
export interface UpstreamProvider extends ChatUpstream, TranscriptionUpstream, SpeechUpstream {}
