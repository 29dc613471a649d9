import { CatalogEntry } from '../../config/gateway-config.schema';
import { discardBody, HttpTransport, readJsonBody } from '../http/http-transport';
import { SseReader } from '../http/sse-reader';
import { bearerAuth } from '../http/upstream-auth';
import { OpenAiCompatibleProvider, openAiHooks } from '../openai-compatible/openai-compatible.provider';
import { providerType } from '../provider-type';
import { UpstreamFailure } from '../upstream-failure';
import {
  ChatRequestBody,
  ChatUpstream,
  PASS_THROUGH,
  SpeechAudio,
  SpeechInput,
  SpeechUpstream,
  TranscriptionInput,
  TranscriptionUpstream,
  UpstreamChatJson,
  UpstreamChatStream,
  VerboseTranscription,
} from '../upstream-provider';
import { responsesRequest } from './chat-to-responses';
import { OpenAiProviderConfig } from './openai.config';
import type { ResponsesResponse } from './responses-events';
import { chunksOfResponseEvents, completionOfResponse } from './responses-to-chat';

/** The Responses API's one endpoint under base_url (`…/v1`). */
const RESPONSES_PATH = '/responses';

/**
 * OpenAI's own platform (DESIGN.md section 12, docs/configuration.md "openai"): a bearer key; chat completions,
 * transcription and speech exactly as `openai-compatible` (that provider serves them); and the Responses API
 * natively. A Responses client's request goes as it came (PASS_THROUGH: only `model`, `store: false`, a capped
 * output limit and the stream flag change) and its answer comes back whole beside the chat view; a chat or Messages
 * client's request for an `upstream_api: responses` entry is translated (chat-to-responses.ts). Either way the
 * answer is read by responses-to-chat.ts, usage in chat's token classes.
 */
export class OpenAiProvider implements ChatUpstream, TranscriptionUpstream, SpeechUpstream {
  private readonly compatible: OpenAiCompatibleProvider;
  /** Its own pool: the compatible provider's transport maps each operation to chat completions or audio. */
  private readonly responses: HttpTransport;

  constructor(readonly name: string, config: OpenAiProviderConfig, env: NodeJS.ProcessEnv = process.env) {
    this.compatible = new OpenAiCompatibleProvider(name, config, openAiHooks(config, env));
    const key = config.api_key_env ? env[config.api_key_env] : undefined;
    this.responses = new HttpTransport(name, config, { auth: bearerAuth(key), path: () => RESPONSES_PATH });
  }

  async chat(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatJson> {
    const request = this.responsesRequestOf(model, body, false);
    if (!request) return this.compatible.chat(model, body, signal);
    const answer = await this.responses.post('chat', body.model, JSON.stringify(request), signal, 'application/json');
    const parsed = await readJsonBody(this.name, answer.body);
    if (parsed.object !== 'response' || !Array.isArray(parsed.output)) {
      throw new UpstreamFailure('bad_response', `Upstream ${this.name} sent an answer that is not a response.`);
    }
    return { body: completionOfResponse(parsed as unknown as ResponsesResponse, body[PASS_THROUGH]?.dialect === 'openai-responses') };
  }

  async chatStream(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatStream> {
    const request = this.responsesRequestOf(model, body, true);
    if (!request) return this.compatible.chatStream(model, body, signal);
    const answer = await this.responses.post('chat_stream', body.model, JSON.stringify(request), signal, 'application/json');
    if (!answer.contentType.startsWith('text/event-stream')) {
      discardBody(answer.body);
      throw new UpstreamFailure('bad_response', `Upstream ${this.name} answered a stream request with ${answer.contentType || 'no content type'}.`);
    }
    return chunksOfResponseEvents(this.name, new SseReader(this.name, answer.body), body[PASS_THROUGH]?.dialect === 'openai-responses');
  }

  transcribe(model: CatalogEntry, input: TranscriptionInput, signal: AbortSignal): Promise<VerboseTranscription> {
    return this.compatible.transcribe(model, input, signal);
  }

  speech(model: CatalogEntry, input: SpeechInput, signal: AbortSignal): Promise<SpeechAudio> {
    return this.compatible.speech(model, input, signal);
  }

  async close(): Promise<void> {
    await Promise.all([this.compatible.close(), this.responses.close()]);
  }

  /**
   * The body for /responses, or null when the request goes to chat completions: a Responses client's own body
   * (pass-through: the deployment's model, `store: false`, the gateway's cap on the output when the hold cut it,
   * the stream flag), else for an `upstream_api: responses` entry the chat body translated.
   */
  private responsesRequestOf(model: CatalogEntry, body: ChatRequestBody, stream: boolean): Record<string, unknown> | null {
    const passThrough = body[PASS_THROUGH];
    let request: Record<string, unknown>;
    if (passThrough?.dialect === 'openai-responses') {
      request = { ...passThrough.body };
      const cap = body.max_completion_tokens;
      if (typeof cap === 'number' && (typeof request.max_output_tokens !== 'number' || cap < request.max_output_tokens)) request.max_output_tokens = cap;
    } else if (model.upstream_api === 'responses') {
      request = { ...responsesRequest({ ...body, stream }, model) };
    } else {
      return null;
    }
    request.model = body.model;
    // The gateway keeps no state, and a tenant's conversation is not to be kept in the operator's account (DESIGN.md 12).
    request.store = false;
    if (stream) request.stream = true;
    else delete request.stream;
    return request;
  }
}

/** The `openai` provider type: chat (chat completions, or the Responses API), transcription and speech. */
export const OPENAI = providerType({
  type: 'openai',
  config: OpenAiProviderConfig,
  kinds: ['chat', 'transcription', 'speech'],
  create: (name, config) => new OpenAiProvider(name, config),
});
