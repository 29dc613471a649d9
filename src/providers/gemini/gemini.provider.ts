import { CatalogEntry } from '../../config/gateway-config.schema';
import { discardBody, HttpTransport, readJsonBody, UpstreamOperation } from '../http/http-transport';
import { SseReader } from '../http/sse-reader';
import { fixedHeaders, UpstreamAuth } from '../http/upstream-auth';
import { PRICE_FACTS } from '../chat-contract';
import { providerType } from '../provider-type';
import { UpstreamFailure } from '../upstream-failure';
import { ChatRequestBody, ChatUpstream, UpstreamChatJson, UpstreamChatStream } from '../upstream-provider';
import { geminiRequest } from './chat-to-gemini';
import { GeminiProviderConfig } from './gemini.config';
import { chunksOfGeminiEvents, completionOfResponse } from './gemini-to-chat';
import { geminiPriceFacts, GeminiResponse } from './gemini-wire';

/** Google's `x-goog-api-key` (https://ai.google.dev/gemini-api/docs/api-key); none without a key. */
export function googleApiKeyAuth(key: string | undefined): UpstreamAuth {
  return fixedHeaders(key ? { 'x-goog-api-key': key } : {});
}

/** Gemini's endpoints under the provider's base_url (`https://generativelanguage.googleapis.com`): the model is in the path. */
export function geminiPath(operation: UpstreamOperation, upstreamModel: string): string {
  const model = upstreamModel.replace(/^models\//, '');
  return operation === 'chat_stream' ? `/v1beta/models/${model}:streamGenerateContent?alt=sse` : `/v1beta/models/${model}:generateContent`;
}

/**
 * Whether Google's error body says the key is bad: an ErrorInfo detail whose reason is one of `API_KEY_…`
 * (API_KEY_INVALID comes with a 400 INVALID_ARGUMENT: https://ai.google.dev/gemini-api/docs/troubleshooting).
 */
export function refusesGeminiKey(_status: number, body: unknown): boolean {
  const details = (body as { error?: { details?: unknown } } | undefined)?.error?.details;
  return Array.isArray(details) && details.some((detail) => typeof detail?.reason === 'string' && detail.reason.startsWith('API_KEY_'));
}

/**
 * Google's Gemini API (DESIGN.md section 11, docs/configuration.md "gemini"): generateContent and
 * streamGenerateContent with `x-goog-api-key`. Every client's request arrives as a chat body and is translated
 * (chat-to-gemini.ts); the answer and the stream are read back into the chat contract (gemini-to-chat.ts), usage
 * in chat's token classes. Errors ({error: {code, message, status}}) are mapped by the transport: 429
 * RESOURCE_EXHAUSTED is retried on another deployment, 5xx (503 UNAVAILABLE) too, a refused key (401, 403, or a 400 naming
 * API_KEY_INVALID) is the operator's (502), other 4xx pass through. The tier that served the answer, from its
 * `x-gemini-service-tier` header, rides on the completion and on every chunk as PRICE_FACTS.
 */
export class GeminiProvider implements ChatUpstream {
  private readonly transport: HttpTransport;

  constructor(readonly name: string, config: GeminiProviderConfig, env: NodeJS.ProcessEnv = process.env) {
    const key = config.api_key_env ? env[config.api_key_env] : undefined;
    this.transport = new HttpTransport(name, config, { auth: googleApiKeyAuth(key), path: geminiPath, refusesCredentials: refusesGeminiKey });
  }

  async chat(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatJson> {
    const request = geminiRequest(body, model);
    const answer = await this.transport.post('chat', body.model, JSON.stringify(request), signal, 'application/json');
    const parsed = await readJsonBody(this.name, answer.body);
    if (!Array.isArray(parsed.candidates) && !(parsed.promptFeedback && typeof parsed.promptFeedback === 'object')) {
      throw new UpstreamFailure('bad_response', `Upstream ${this.name} sent an answer without candidates.`);
    }
    const completion = completionOfResponse(parsed as GeminiResponse);
    const facts = geminiPriceFacts(answer.headers);
    if (facts) completion[PRICE_FACTS] = facts;
    return { body: completion };
  }

  async chatStream(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatStream> {
    const request = geminiRequest(body, model);
    const answer = await this.transport.post('chat_stream', body.model, JSON.stringify(request), signal, 'application/json');
    if (!answer.contentType.startsWith('text/event-stream')) {
      discardBody(answer.body);
      throw new UpstreamFailure('bad_response', `Upstream ${this.name} answered a stream request with ${answer.contentType || 'no content type'}.`);
    }
    return chunksOfGeminiEvents(this.name, new SseReader(this.name, answer.body), geminiPriceFacts(answer.headers));
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}

/** The `gemini` provider type: chat models. */
export const GEMINI = providerType({
  type: 'gemini',
  config: GeminiProviderConfig,
  kinds: ['chat'],
  create: (name, config) => new GeminiProvider(name, config),
});
