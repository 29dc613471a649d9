import type { FormData } from 'undici';

/** One request as it is about to leave, for an auth scheme that signs what it sends (SigV4 signs the method, path and body). */
export interface OutgoingRequest {
  method: 'POST';
  /** The path and query under the upstream's origin. */
  path: string;
  body: string | FormData;
}

/**
 * How a provider authenticates its requests: the headers it adds to each. A provider passes one to its
 * HttpTransport: bearer (OpenAI and its compatibles), Anthropic's `x-api-key` with `anthropic-version`,
 * Gemini's `x-goog-api-key`, Azure's `api-key` (Bedrock signs with SigV4 through the AWS SDK instead).
 */
export interface UpstreamAuth {
  headers(request: OutgoingRequest): Readonly<Record<string, string>>;
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/** `Authorization: Bearer <key>` on every request; no header without a key (a local server that wants none). */
export function bearerAuth(key: string | undefined): UpstreamAuth {
  const headers = key ? Object.freeze({ authorization: `Bearer ${key}` }) : NO_HEADERS;
  return { headers: () => headers };
}

/**
 * Anthropic's `x-api-key` (none without a key), and the API version the gateway speaks (a pass-through request's
 * own `anthropic-version` replaces it: HttpTransport.post's extra headers).
 */
export function anthropicAuth(key: string | undefined, version: string): UpstreamAuth {
  const headers: Record<string, string> = { 'anthropic-version': version };
  if (key) headers['x-api-key'] = key;
  Object.freeze(headers);
  return { headers: () => headers };
}

/** Azure OpenAI's `api-key` header (none without a key); never an Authorization header. */
export function azureApiKeyAuth(key: string | undefined): UpstreamAuth {
  const headers = key ? Object.freeze({ 'api-key': key }) : NO_HEADERS;
  return { headers: () => headers };
}

/** Google's `x-goog-api-key` (https://ai.google.dev/gemini-api/docs/api-key); none without a key. */
export function googleApiKeyAuth(key: string | undefined): UpstreamAuth {
  const headers = key ? Object.freeze({ 'x-goog-api-key': key }) : NO_HEADERS;
  return { headers: () => headers };
}
