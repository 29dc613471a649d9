import type { CatalogEntry } from '../config/gateway-config.schema';
import type { ChatRequestBody } from './upstream-provider';

/**
 * What every translating provider (anthropic, gemini, bedrock) reads the same way from a chat request: the text of
 * a message, a tool call's arguments, the output limit, the stop strings, an image part's URL, the paid tier asked. One reading, so that
 * the three translations cannot drift apart.
 */

type Json = Record<string, unknown>;

/**
 * chat's service_tier as the paid tier Gemini's `serviceTier` and Bedrock's `serviceTier.type` both name: OpenAI's
 * `priority` and its 2026 name `fast` are priority, `flex` is flex; the standard values (auto, default, standard)
 * ask for none, which both serve as their standard tier.
 */
export function paidTier(tier: unknown): 'priority' | 'flex' | undefined {
  if (tier === 'priority' || tier === 'fast') return 'priority';
  return tier === 'flex' ? 'flex' : undefined;
}

/** A message's text: a string, or its text parts joined. */
export function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Json[])
    .filter((part) => part?.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text as string)
    .join('');
}

/** JSON text that is an object (a tool call's arguments, a tool result), parsed; null when it is not one. */
export function jsonObjectOf(text: unknown): Json | null {
  if (typeof text !== 'string' || text.trim() === '') return null;
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Json) : null;
  } catch {
    return null;
  }
}

/** The output limit: what the gateway or the client set (max_completion_tokens, else max_tokens), else the model's. */
export function outputLimit(body: ChatRequestBody, model: CatalogEntry): number {
  for (const value of [body.max_completion_tokens, body.max_tokens]) if (typeof value === 'number' && value >= 1) return value;
  return model.max_output_tokens ?? 4096;
}

/** `stop` as a list of non-empty strings. */
export function stopStrings(stop: unknown): string[] {
  if (typeof stop === 'string') return [stop];
  return Array.isArray(stop) ? stop.filter((s): s is string => typeof s === 'string' && s !== '') : [];
}

/** An image part's URL (`image_url` is a string or `{url}`); '' when there is none. */
export function imageUrlOf(imageUrl: unknown): string {
  if (typeof imageUrl === 'string') return imageUrl;
  const url = (imageUrl as Json | null)?.url;
  return typeof url === 'string' ? url : '';
}

/** A base64 `data:` URL's media type and data; null for any other URL. */
export function base64DataUrl(url: string): { mediaType: string; data: string } | null {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1], data: match[2] } : null;
}
