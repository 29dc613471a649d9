import { FormData } from 'undici';
import { CatalogEntry, OutputLimitField } from '../../config/gateway-config.schema';
import { ChatCompletion } from '../chat-contract';
import { discardBody, HttpTransport, readJsonBody, TransportConfig, TransportHooks, UpstreamOperation } from '../http/http-transport';
import { SseReader } from '../http/sse-reader';
import { bearerAuth } from '../http/upstream-auth';
import { providerType } from '../provider-type';
import { UpstreamFailure } from '../upstream-failure';
import {
  ChatRequestBody,
  ChatUpstream,
  SpeechAudio,
  SpeechInput,
  SpeechUpstream,
  TranscriptionInput,
  TranscriptionUpstream,
  UpstreamChatJson,
  UpstreamChatStream,
  VerboseTranscription,
} from '../upstream-provider';
import { chatChunks } from './chat-chunks';
import { OpenAiCompatibleProviderConfig } from './openai-compatible.config';

/** OpenAI's endpoints, under the provider's base_url (`…/v1`). */
const PATHS: Record<Exclude<UpstreamOperation, 'count_tokens'>, string> = {
  chat: '/chat/completions',
  chat_stream: '/chat/completions',
  transcription: '/audio/transcriptions',
  speech: '/audio/speech',
};
// OpenAI has no token-count endpoint: this provider never asks for one.
const openAiPath = (operation: UpstreamOperation): string => PATHS[operation as Exclude<UpstreamOperation, 'count_tokens'>];

/** OpenAI's transport: a bearer key, its endpoints under base_url. */
export function openAiHooks(config: Pick<OpenAiCompatibleProviderConfig, 'api_key_env'>, env: NodeJS.ProcessEnv = process.env): TransportHooks {
  const key = config.api_key_env ? env[config.api_key_env] : undefined;
  return { auth: bearerAuth(key), path: openAiPath };
}

/** What the provider reads of its config: where and how to connect, and the one output-limit field its server takes. */
export interface OpenAiShapedConfig extends TransportConfig {
  api_key_env?: string;
  output_limit_field?: OutputLimitField;
}

/**
 * OpenAI's own API shapes: OpenAI, Groq, OpenRouter, Together, vLLM, Ollama, llama.cpp, speaches; and, with
 * another transport (`hooks`: its auth and paths), any upstream whose bodies are OpenAI's (Azure OpenAI).
 */
export class OpenAiCompatibleProvider implements ChatUpstream, TranscriptionUpstream, SpeechUpstream {
  private readonly transport: HttpTransport;
  private readonly limitField: OutputLimitField | undefined;

  constructor(readonly name: string, config: OpenAiShapedConfig, hooks: TransportHooks = openAiHooks(config)) {
    this.transport = new HttpTransport(name, config, hooks);
    this.limitField = config.output_limit_field;
  }

  async chat(_model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatJson> {
    const answer = await this.transport.post('chat', body.model, JSON.stringify(withLimitIn(this.limitField, body)), signal, 'application/json');
    const parsed = await readJsonBody(this.name, answer.body);
    if (!Array.isArray(parsed.choices)) {
      throw new UpstreamFailure('bad_response', `Upstream ${this.name} sent a chat answer without choices.`);
    }
    return { body: parsed as ChatCompletion };
  }

  async chatStream(_model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatStream> {
    const answer = await this.transport.post('chat_stream', body.model, JSON.stringify(withLimitIn(this.limitField, body)), signal, 'application/json');
    if (!answer.contentType.startsWith('text/event-stream')) {
      discardBody(answer.body);
      throw new UpstreamFailure('bad_response', `Upstream ${this.name} answered a stream request with ${answer.contentType || 'no content type'}.`);
    }
    return chatChunks(this.name, new SseReader(this.name, answer.body));
  }

  async transcribe(model: CatalogEntry, input: TranscriptionInput, signal: AbortSignal): Promise<VerboseTranscription> {
    const form = new FormData();
    form.append('file', new Blob([input.file], { type: input.mimetype || 'application/octet-stream' }), input.filename);
    form.append('model', model.upstream_model);
    // The fullest answer, so that the duration is known whatever format the client asked for.
    form.append('response_format', 'verbose_json');
    if (input.language) form.append('language', input.language);
    if (input.prompt) form.append('prompt', input.prompt);
    if (input.temperature) form.append('temperature', input.temperature);
    const answer = await this.transport.post('transcription', model.upstream_model, form, signal);
    const parsed = await readJsonBody(this.name, answer.body);
    if (typeof parsed.text !== 'string') {
      throw new UpstreamFailure('bad_response', `Upstream ${this.name} sent a transcription without text.`);
    }
    return parsed as VerboseTranscription;
  }

  async speech(model: CatalogEntry, input: SpeechInput, signal: AbortSignal): Promise<SpeechAudio> {
    const body = JSON.stringify({ model: model.upstream_model, ...input });
    const answer = await this.transport.post('speech', model.upstream_model, body, signal, 'application/json');
    return { contentType: answer.contentType, body: answer.body };
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}

/**
 * The body with its output limit in `field` alone, when the operator named the one field the server takes
 * (`output_limit_field`): the limit held for is max_completion_tokens ?? max_tokens (src/chat/chat-request.pipe.ts),
 * so that is the value sent. Unnamed, or no limit: the body as it is.
 */
export function withLimitIn(field: OutputLimitField | undefined, body: ChatRequestBody): ChatRequestBody {
  if (field === undefined) return body;
  const limit = body.max_completion_tokens ?? body.max_tokens;
  if (limit === undefined || limit === null) return body;
  const { max_tokens: _old, max_completion_tokens: _new, ...rest } = body;
  return { ...rest, [field]: limit } as ChatRequestBody;
}

/** The `openai-compatible` provider type: chat, transcription and speech. */
export const OPENAI_COMPATIBLE = providerType({
  type: 'openai-compatible',
  config: OpenAiCompatibleProviderConfig,
  kinds: ['chat', 'transcription', 'speech'],
  create: (name, config) => new OpenAiCompatibleProvider(name, config),
});
