import { CatalogEntry, OutputLimitField, ProviderConfig } from '../../config/gateway-config.schema';
import { UpstreamFailure } from '../upstream-failure';
import {
  ChatRequestBody,
  SpeechAudio,
  SpeechInput,
  TranscriptionInput,
  UpstreamChatJson,
  UpstreamChatStream,
  UpstreamProvider,
  VerboseTranscription,
} from '../upstream-provider';
import { FormData } from 'undici';
import { parseSse } from './sse-parser';
import { discardBody, readJsonBody, UpstreamTransport } from './upstream-transport';

/** OpenAI's own API shapes: OpenAI, Groq, OpenRouter, Together, vLLM, Ollama, llama.cpp, speaches. */
export class OpenAiCompatibleProvider implements UpstreamProvider {
  private readonly transport: UpstreamTransport;
  private readonly limitField: OutputLimitField | undefined;

  constructor(readonly name: string, config: ProviderConfig) {
    this.transport = new UpstreamTransport(name, config);
    this.limitField = config.output_limit_field;
  }

  async chat(_model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatJson> {
    const answer = await this.transport.post('/chat/completions', JSON.stringify(withLimitIn(this.limitField, body)), signal, 'application/json');
    const parsed = await readJsonBody(this.name, answer.body);
    if (!Array.isArray(parsed.choices)) {
      throw new UpstreamFailure('bad_response', `Upstream ${this.name} sent a chat answer without choices.`);
    }
    return { body: parsed };
  }

  async chatStream(_model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatStream> {
    const answer = await this.transport.post('/chat/completions', JSON.stringify(withLimitIn(this.limitField, body)), signal, 'application/json');
    if (!answer.contentType.startsWith('text/event-stream')) {
      discardBody(answer.body);
      throw new UpstreamFailure('bad_response', `Upstream ${this.name} answered a stream request with ${answer.contentType || 'no content type'}.`);
    }
    return parseSse(this.name, answer.body);
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
    const answer = await this.transport.post('/audio/transcriptions', form, signal);
    const parsed = await readJsonBody(this.name, answer.body);
    if (typeof parsed.text !== 'string') {
      throw new UpstreamFailure('bad_response', `Upstream ${this.name} sent a transcription without text.`);
    }
    return parsed as VerboseTranscription;
  }

  async speech(model: CatalogEntry, input: SpeechInput, signal: AbortSignal): Promise<SpeechAudio> {
    const body = JSON.stringify({ model: model.upstream_model, ...input });
    const answer = await this.transport.post('/audio/speech', body, signal, 'application/json');
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
