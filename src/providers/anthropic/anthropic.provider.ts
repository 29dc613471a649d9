import { CatalogEntry } from '../../config/gateway-config.schema';
import { discardBody, HttpTransport, readJsonBody, UpstreamOperation } from '../http/http-transport';
import { SseReader } from '../http/sse-reader';
import { fixedHeaders, UpstreamAuth } from '../http/upstream-auth';
import { providerType } from '../provider-type';
import { UpstreamFailure } from '../upstream-failure';
import { ChatRequestBody, ChatUpstream, PASS_THROUGH, PassThrough, TokenCountUpstream, UpstreamChatJson, UpstreamChatStream } from '../upstream-provider';
import { chunksOfMessageEvents, completionOfMessage } from './anthropic-to-chat';
import { ANTHROPIC_VERSION, AnthropicMessage, FAST_MODE_BETA } from './anthropic-wire';
import { AnthropicProviderConfig } from './anthropic.config';
import { anthropicRequest, withCacheBreakpoints } from './chat-to-anthropic';

/**
 * Anthropic's `x-api-key` (none without a key), and the API version the gateway speaks (a pass-through request's
 * own `anthropic-version` replaces it: HttpTransport.post's extra headers).
 */
export function anthropicAuth(key: string | undefined, version: string): UpstreamAuth {
  return fixedHeaders(key ? { 'anthropic-version': version, 'x-api-key': key } : { 'anthropic-version': version });
}

/** Anthropic's endpoints, under the provider's base_url (`https://api.anthropic.com`). */
function anthropicPath(operation: UpstreamOperation): string {
  return operation === 'count_tokens' ? '/v1/messages/count_tokens' : '/v1/messages';
}

/**
 * Anthropic's Messages API (DESIGN.md section 11, docs/configuration.md "anthropic"): `x-api-key` with
 * `anthropic-version`. A Messages client's request goes as it came (PASS_THROUGH: only `model` and a capped
 * output limit change, its anthropic-* headers kept) and its answer comes back whole beside the chat view; a
 * chat or Responses client's request is translated (chat-to-anthropic.ts) and its answer read back
 * (anthropic-to-chat.ts). Usage always arrives in chat's token classes, 1-hour cache writes apart.
 */
export class AnthropicProvider implements ChatUpstream, TokenCountUpstream {
  private readonly transport: HttpTransport;

  constructor(readonly name: string, config: AnthropicProviderConfig, env: NodeJS.ProcessEnv = process.env) {
    const key = config.api_key_env ? env[config.api_key_env] : undefined;
    this.transport = new HttpTransport(name, config, { auth: anthropicAuth(key, ANTHROPIC_VERSION), path: anthropicPath });
  }

  async chat(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatJson> {
    const { request, headers } = this.requestOf(model, body, false);
    const answer = await this.transport.post('chat', body.model, JSON.stringify(request), signal, 'application/json', headers);
    const parsed = await readJsonBody(this.name, answer.body);
    if (parsed.type !== 'message' || !Array.isArray(parsed.content)) {
      throw new UpstreamFailure('bad_response', `Upstream ${this.name} sent an answer that is not a message.`);
    }
    return { body: completionOfMessage(parsed as AnthropicMessage) };
  }

  async chatStream(model: CatalogEntry, body: ChatRequestBody, signal: AbortSignal): Promise<UpstreamChatStream> {
    const { request, headers } = this.requestOf(model, body, true);
    const answer = await this.transport.post('chat_stream', body.model, JSON.stringify(request), signal, 'application/json', headers);
    if (!answer.contentType.startsWith('text/event-stream')) {
      discardBody(answer.body);
      throw new UpstreamFailure('bad_response', `Upstream ${this.name} answered a stream request with ${answer.contentType || 'no content type'}.`);
    }
    return chunksOfMessageEvents(this.name, new SseReader(this.name, answer.body));
  }

  /** Anthropic's own count of a Messages request's input tokens: its answer as it came. */
  async countTokens(model: CatalogEntry, request: PassThrough, signal: AbortSignal): Promise<Record<string, unknown>> {
    const { max_tokens: _limit, stream: _stream, ...counted } = request.body;
    const body = model.auto_cache ? withCacheBreakpoints({ ...counted, model: model.upstream_model }) : { ...counted, model: model.upstream_model };
    const answer = await this.transport.post('count_tokens', model.upstream_model, JSON.stringify(body), signal, 'application/json', request.headers);
    return readJsonBody(this.name, answer.body);
  }

  close(): Promise<void> {
    return this.transport.close();
  }

  /**
   * What goes upstream: the client's own Messages body when it came in Anthropic's dialect, else the chat
   * body translated; the deployment's model, the gateway's cap on the output (when the hold cut it), the
   * stream flag, and `auto_cache`'s breakpoints.
   */
  private requestOf(model: CatalogEntry, body: ChatRequestBody, stream: boolean): { request: Record<string, unknown>; headers: Readonly<Record<string, string>> | undefined } {
    const passThrough = body[PASS_THROUGH];
    let headers = passThrough?.headers;
    let request: Record<string, unknown>;
    if (passThrough?.dialect === 'anthropic') {
      request = { ...passThrough.body, model: body.model };
      const cap = body.max_completion_tokens;
      if (typeof cap === 'number' && (typeof request.max_tokens !== 'number' || cap < request.max_tokens)) request.max_tokens = cap;
      if (stream) request.stream = true;
      else delete request.stream;
    } else {
      request = anthropicRequest({ ...body, stream }, model);
      // Fast mode needs its beta header, which a chat client cannot send in Anthropic's name.
      if (request.speed === 'fast') headers = { 'anthropic-beta': FAST_MODE_BETA };
    }
    if (model.auto_cache) request = withCacheBreakpoints(request);
    return { request, headers };
  }
}

/** The `anthropic` provider type: chat models (and a Messages request's token count). */
export const ANTHROPIC = providerType({
  type: 'anthropic',
  config: AnthropicProviderConfig,
  kinds: ['chat'],
  create: (name, config) => new AnthropicProvider(name, config),
});
