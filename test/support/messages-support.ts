import Anthropic from '@anthropic-ai/sdk';
import { postJson } from './chat-support';
import { TestApp } from './test-app';

/** The official Anthropic SDK against the gateway (no retries: a test sees every answer). */
export function anthropic(gw: TestApp, key: string, options: { bearer?: boolean; headers?: Record<string, string> } = {}): Anthropic {
  return new Anthropic({
    ...(options.bearer ? { authToken: key, apiKey: null } : { apiKey: key }),
    baseURL: gw.url,
    maxRetries: 0,
    defaultHeaders: options.headers,
  });
}

/** POSTs a raw body to /v1/messages with the key as x-api-key (for what the SDK would refuse to send, and to read the SSE as sent). */
export function postMessages(gw: TestApp, key: string, body: unknown, path = '/v1/messages'): Promise<Response> {
  return postJson(gw, key, path, body, {
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
  });
}
