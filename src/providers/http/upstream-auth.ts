import type { FormData } from 'undici';

/** One request as it is about to leave, for an auth scheme that signs what it sends (SigV4 signs the method, path and body). */
export interface OutgoingRequest {
  method: 'POST';
  /** The path and query under the upstream's origin. */
  path: string;
  body: string | FormData;
}

/**
 * How a provider authenticates its requests: the headers it adds to each. Each provider type states its own
 * scheme in its folder and passes it to its HttpTransport (Anthropic's `x-api-key` with `anthropic-version`,
 * Gemini's `x-goog-api-key`, Azure's `api-key`; Bedrock signs with SigV4 through the AWS SDK instead); the
 * standard bearer scheme, shared by OpenAI and its compatibles, is here.
 */
export interface UpstreamAuth {
  headers(request: OutgoingRequest): Readonly<Record<string, string>>;
}

/** The same headers on every request (a key read once at start). */
export function fixedHeaders(headers: Record<string, string>): UpstreamAuth {
  const frozen = Object.freeze({ ...headers });
  return { headers: () => frozen };
}

/** `Authorization: Bearer <key>` on every request; no header without a key (a local server that wants none). */
export function bearerAuth(key: string | undefined): UpstreamAuth {
  return fixedHeaders(key ? { authorization: `Bearer ${key}` } : {});
}
