import { isJsonObject } from '../common/json/scalar-fields';
import type { CatalogEntry } from '../config/gateway-config.schema';
import type { ChatAssistantMessage, ChatContentPart, ChatFunctionDefinition, ChatFunctionTool, ChatImagePart, ChatRequestBody, ChatTextPart, ChatToolCall } from './chat-contract';

/**
 * What every translating provider (anthropic, gemini, bedrock) reads the same way from a chat request: the text of
 * a message, its tool calls, a tool call's arguments, the function tools and the one a tool_choice names, the output
 * limit, the stop strings, an image part's URL, the paid tier asked. One reading, so that the three translations
 * cannot drift apart. The route checks only that a message is an object with a string role: what a message holds
 * is read with checks, not trusted to be of its type.
 */

/** A message's content, whatever its role (null: an assistant message of tool calls only). */
type MessageContent = string | readonly ChatContentPart[] | null | undefined;

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
export function messageText(content: MessageContent): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter(isTextPart)
    .map((part) => part.text)
    .join('');
}

/** A text part whose text is a string. */
export function isTextPart(part: ChatContentPart | null | undefined): part is ChatTextPart {
  return part?.type === 'text' && typeof part.text === 'string';
}

/** An assistant message's tool calls (none when `tool_calls` is not a list). */
export function toolCallsOf(message: ChatAssistantMessage): ChatToolCall[] {
  return Array.isArray(message.tool_calls) ? message.tool_calls : [];
}

/** JSON text that is an object (a tool call's arguments, a tool result), parsed; null when it is not one. */
export function jsonObjectOf(text: unknown): Record<string, unknown> | null {
  if (typeof text !== 'string' || text.trim() === '') return null;
  try {
    const parsed: unknown = JSON.parse(text);
    return isJsonObject(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

/** The definitions of the function tools, in order (custom tools are OpenAI's alone); a tool without one reads as empty. */
export function functionDefinitions(tools: ChatRequestBody['tools']): Partial<ChatFunctionDefinition>[] {
  if (!Array.isArray(tools)) return [];
  return tools.filter((tool): tool is ChatFunctionTool => tool?.type === 'function').map((tool) => tool.function ?? {});
}

/** The function a tool_choice forces (`{type: "function", function: {name}}`); undefined for any other choice. */
export function forcedFunctionName(choice: ChatRequestBody['tool_choice']): string | undefined {
  if (!choice || typeof choice !== 'object' || !('function' in choice)) return undefined;
  const name = choice.function?.name;
  return typeof name === 'string' ? name : undefined;
}

/** The output limit: what the gateway or the client set (max_completion_tokens, else max_tokens), else the model's. */
export function outputLimit(body: ChatRequestBody, model: CatalogEntry): number {
  for (const value of [body.max_completion_tokens, body.max_tokens]) if (typeof value === 'number' && value >= 1) return value;
  return model.max_output_tokens ?? 4096;
}

/** `stop` as a list of non-empty strings. */
export function stopStrings(stop: ChatRequestBody['stop']): string[] {
  if (typeof stop === 'string') return [stop];
  return Array.isArray(stop) ? stop.filter((s): s is string => typeof s === 'string' && s !== '') : [];
}

/** An image part's URL (`image_url` is a string or `{url}`); '' when there is none. */
export function imageUrlOf(imageUrl: ChatImagePart['image_url'] | undefined): string {
  if (typeof imageUrl === 'string') return imageUrl;
  const url = imageUrl?.url;
  return typeof url === 'string' ? url : '';
}

/** A base64 `data:` URL's media type and data; null for any other URL. */
export function base64DataUrl(url: string): { mediaType: string; data: string } | null {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1], data: match[2] } : null;
}
