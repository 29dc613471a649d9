import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { BedrockRuntimeClient, ConverseCommand, ConverseResponse, ConverseStreamCommand, ConverseStreamOutput } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { BedrockProviderConfig } from './bedrock.config';
import { beforeHeaders, CredentialsRefused, UpstreamFailure } from '../upstream-failure';
import type { ConverseInput } from './chat-to-bedrock';
import { traceAttempts } from './bedrock-tracing';

/** Keep-alive connections idle longer than this are closed, as HttpTransport's. */
const KEEP_ALIVE_MS = 30_000;

/** The SDK's errors of a throttled request, and of Bedrock's own failures (retried on another deployment). */
const THROTTLED = new Set(['ThrottlingException']);
const SERVER_FAILURES = new Set(['ServiceUnavailableException', 'InternalServerException', 'ModelNotReadyException', 'ModelErrorException']);
/** AWS refusing the gateway's own credentials or their rights (https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html). */
const CREDENTIALS_REFUSED = new Set([
  'AccessDeniedException',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'IncompleteSignature',
  'InvalidClientTokenId',
  'MissingAuthenticationToken',
  'MissingAuthenticationTokenException',
  'ExpiredTokenException',
  'NotAuthorized',
]);
/** The socket errors the SDK's NodeHttpHandler renames TimeoutError: a broken connection, not a slow one. */
const BROKEN = new Set(['ECONNRESET', 'EPIPE']);
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Bedrock's Converse and ConverseStream through the AWS SDK (DESIGN.md section 11): SigV4 signing, endpoints and
 * event-stream decoding are the SDK's; this owns the client (region, endpoint override, credentials, a keep-alive
 * pool of `max_connections`, the timeouts) and turns every failure into an UpstreamFailure. The SDK makes one
 * attempt (`maxAttempts: 1`): the router owns retries. `signal` reaches the socket.
 */
export class BedrockTransport {
  private readonly client: BedrockRuntimeClient;

  constructor(
    readonly name: string,
    config: BedrockProviderConfig,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    const agent = { keepAlive: true, maxSockets: config.max_connections, timeout: KEEP_ALIVE_MS };
    this.client = new BedrockRuntimeClient({
      region: config.region,
      ...(config.base_url && { endpoint: config.base_url }),
      ...(config.access_key_id_env && config.secret_access_key_env && { credentials: staticCredentials(config, env) }),
      maxAttempts: 1,
      requestHandler: new NodeHttpHandler({
        connectionTimeout: config.timeouts.connect_ms,
        // No answer's headers within request_ms fails the call; a silent socket (a stalled stream) as well.
        requestTimeout: config.timeouts.request_ms,
        throwOnRequestTimeout: true,
        socketTimeout: config.timeouts.request_ms,
        httpAgent: new HttpAgent(agent),
        httpsAgent: new HttpsAgent(agent),
      }),
    });
    traceAttempts(this.client, name);
  }

  /** One Converse call: the whole answer, and the AWS request id. */
  async converse(input: ConverseInput, signal: AbortSignal): Promise<{ answer: ConverseResponse; requestId: string | undefined }> {
    try {
      const answer = await this.client.send(new ConverseCommand(input), { abortSignal: signal });
      return { answer, requestId: answer.$metadata.requestId };
    } catch (err) {
      throw bedrockFailure(this.name, err);
    }
  }

  /** One ConverseStream call, resolved once the answer's headers arrived; its events throw UpstreamFailure. */
  async converseStream(input: ConverseInput, signal: AbortSignal): Promise<{ events: AsyncIterable<ConverseStreamOutput>; requestId: string | undefined }> {
    let output;
    try {
      output = await this.client.send(new ConverseStreamCommand(input), { abortSignal: signal });
    } catch (err) {
      throw bedrockFailure(this.name, err);
    }
    if (!output.stream) throw new UpstreamFailure('bad_response', `Upstream ${this.name} answered a stream request without an event stream.`);
    return { events: this.midStream(output.stream), requestId: output.$metadata.requestId };
  }

  close(): Promise<void> {
    this.client.destroy();
    return Promise.resolve();
  }

  /** The events as they come; an exception event, a cut or a timeout fails the stream. */
  private async *midStream(events: AsyncIterable<ConverseStreamOutput>): AsyncGenerator<ConverseStreamOutput> {
    try {
      yield* events;
    } catch (err) {
      const failure = bedrockFailure(this.name, err);
      // After the answer's headers an exception event is a failed answer, whatever its name (Anthropic's error
      // event reads the same); nothing here happened before the headers.
      const answered = failure.kind === 'rejected' || failure.kind === 'server_error' || failure.kind === 'credentials_refused';
      throw new UpstreamFailure(answered ? 'server_error' : failure.kind, answered ? `Upstream ${this.name} failed mid-stream: ${failure.message}` : failure.message, failure.status);
    }
  }
}

function staticCredentials(config: BedrockProviderConfig, env: NodeJS.ProcessEnv) {
  const sessionToken = config.session_token_env ? env[config.session_token_env] : undefined;
  return {
    accessKeyId: env[config.access_key_id_env!] ?? '',
    secretAccessKey: env[config.secret_access_key_env!] ?? '',
    ...(sessionToken && { sessionToken }),
  };
}

interface SdkError {
  name?: string;
  message?: string;
  code?: string;
  $fault?: 'client' | 'server';
  $metadata?: { httpStatusCode?: number };
}

/**
 * An SDK error as an UpstreamFailure: throttling is a retried 429, Bedrock's 5xx-like exceptions a server_error,
 * AWS refusing the gateway's credentials (UnrecognizedClientException, AccessDeniedException, any 401/403) the
 * operator's fault (credentials_refused), any other service exception (ValidationException,
 * ResourceNotFoundException, …) a rejection with its status and the service's message, passed through. Without an answer: unreachable, timeout,
 * or a broken connection; an abort reads as other providers' (toUpstreamFailure in http-transport.ts).
 */
export function bedrockFailure(name: string, err: unknown): UpstreamFailure {
  if (err instanceof UpstreamFailure) return err;
  const error = (err ?? {}) as SdkError & { cause?: SdkError };
  const type = String(error.name ?? '');
  const message = typeof error.message === 'string' && error.message !== '' ? error.message : type || 'unknown error';
  const status = typeof error.$metadata?.httpStatusCode === 'number' ? error.$metadata.httpStatusCode : null;
  if (type === 'AbortError') return new UpstreamFailure('bad_response', `Request to upstream ${name} aborted.`);
  if (THROTTLED.has(type)) return new UpstreamFailure('rejected', message, 429);
  if (CREDENTIALS_REFUSED.has(type) || status === 401 || status === 403) return new CredentialsRefused(name, status ?? 403, type || null);
  if (SERVER_FAILURES.has(type)) return new UpstreamFailure('server_error', `Upstream ${name} failed: ${type}: ${message}`, status);
  if (type === 'ModelTimeoutException') return new UpstreamFailure('timeout', `Upstream ${name} did not answer in time: ${message}`, status, true);
  if (error.$fault === 'client' || (status !== null && status >= 400 && status < 500)) return new UpstreamFailure('rejected', message, status ?? 400);
  if (error.$fault === 'server' || (status !== null && status >= 500)) return new UpstreamFailure('server_error', `Upstream ${name} failed: ${type}: ${message}`, status);
  const code = String(error.code ?? error.cause?.code ?? '');
  if (UNREACHABLE.has(code)) return beforeHeaders(new UpstreamFailure('unreachable', `Upstream ${name} is unreachable (${code}).`));
  if (BROKEN.has(code)) return new UpstreamFailure('bad_response', `Connection to upstream ${name} broke: ${message}`);
  if (type === 'TimeoutError') return beforeHeaders(new UpstreamFailure('timeout', `Upstream ${name} did not answer in time.`));
  if (type === 'CredentialsProviderError') return beforeHeaders(new UpstreamFailure('server_error', `Upstream ${name} has no AWS credentials: ${message}`));
  return new UpstreamFailure('bad_response', `Connection to upstream ${name} broke: ${message}`);
}
