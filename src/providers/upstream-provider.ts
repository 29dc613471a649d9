import type { Readable } from 'node:stream';
import type { CatalogEntry } from '../config/gateway-config.schema';
import type { ChatChunk, ChatCompletion, ChatRequestBody, PassThrough } from './chat-contract';

export { PASS_THROUGH } from './chat-contract';
export type { ChatRequestBody, PassThrough } from './chat-contract';

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
 * Every kind's interface at once, for a provider that serves them all. The registry never hands it out: a route
 * gets the one interface of its kind (ProviderRegistry.chatFor, …), the kinds each type serves being stated by its
 * folder (providers/provider-type.ts) and checked at start against every catalog entry. Every method honours
 * `signal` (abort reaches the socket or child process) and throws UpstreamFailure for upstream problems.
 */
export interface UpstreamProvider extends ChatUpstream, TranscriptionUpstream, SpeechUpstream {}
