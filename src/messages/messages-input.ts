import { isJsonObject } from '../common/json/scalar-fields';
import { quotedClientText } from '../models/requested-model';
import { invalidField, unsupportedField } from '../errors';

/** One message of a chat completion body. */
export type ChatMessage = Record<string, unknown>;

type ChatPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

/** Claude Code sends its system prompt as several text blocks: they read as paragraphs of one prompt. */
const SYSTEM_BLOCK_SEPARATOR = '\n\n';

/** The chat messages of a Messages request: `system` first, as a system message, then the conversation in order. */
export function chatMessages(system: unknown, messages: unknown): ChatMessage[] {
  const chat: ChatMessage[] = [];
  const systemText = system === undefined || system === null ? '' : systemPrompt(system, 'system');
  if (systemText !== '') chat.push({ role: 'system', content: systemText });
  if (!Array.isArray(messages) || messages.length === 0) throw invalidField('messages', 'messages must be a non-empty array of messages.');
  messages.forEach((message, i) => appendMessage(chat, message, `messages[${i}]`));
  // A conversation of thinking blocks only leaves nothing to send: chat completions need at least one message.
  if (chat.length === 0) throw invalidField('messages', 'messages must hold at least one text, image, tool_use or tool_result block.');
  return chat;
}

/** System text: a string, or text blocks read as paragraphs of one prompt (the top-level `system`, or a system-role message's content). */
function systemPrompt(system: unknown, path: string): string {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) throw invalidField(path, `${path === 'system' ? 'system' : 'content'} must be a string or an array of text blocks.`);
  return system
    .map((block, i) => {
      if (!isJsonObject(block) || block.type !== 'text') throw invalidField(`${path}[${i}]`, 'a system block must be {"type": "text", "text": …}.');
      return requiredString(block, 'text', `${path}[${i}]`);
    })
    .join(SYSTEM_BLOCK_SEPARATOR);
}

function appendMessage(chat: ChatMessage[], message: unknown, path: string): void {
  if (!isJsonObject(message)) throw invalidField(path, 'a message must be an object.');
  const { role, content } = message;
  if (role === 'system') {
    // Claude Code sends instructions mid-conversation this way: a chat system message at that point (DESIGN.md section 11).
    chat.push({ role: 'system', content: systemPrompt(content, `${path}.content`) });
    return;
  }
  if (role !== 'user' && role !== 'assistant') throw invalidField(`${path}.role`, 'role must be user, assistant or system.');
  if (typeof content === 'string') {
    chat.push({ role, content });
    return;
  }
  if (!Array.isArray(content)) throw invalidField(`${path}.content`, 'content must be a string or an array of content blocks.');
  if (role === 'user') appendUserBlocks(chat, content, `${path}.content`);
  else appendAssistantBlocks(chat, content, `${path}.content`);
}

/** Tool results become chat `tool` messages (which must follow the assistant's tool calls); the rest one user message. */
function appendUserBlocks(chat: ChatMessage[], blocks: unknown[], path: string): void {
  const parts: ChatPart[] = [];
  blocks.forEach((block, j) => {
    const at = `${path}[${j}]`;
    if (!isJsonObject(block)) throw invalidField(at, 'a content block must be an object.');
    switch (block.type) {
      case 'text':
        parts.push({ type: 'text', text: requiredString(block, 'text', at) });
        return;
      case 'image':
        parts.push(imagePart(block, at));
        return;
      case 'tool_result':
        chat.push({ role: 'tool', tool_call_id: requiredString(block, 'tool_use_id', at), content: toolResultText(block.content, `${at}.content`) });
        return;
      default:
        throw blockError(block.type, at, 'text, image or tool_result');
    }
  });
  if (parts.length > 0) chat.push({ role: 'user', content: parts.every((part) => part.type === 'text') ? parts.map((part) => (part as { text: string }).text).join('') : parts });
}

/** An assistant turn: its text as the content, its tool_use blocks as tool calls; thinking blocks are passed over. */
function appendAssistantBlocks(chat: ChatMessage[], blocks: unknown[], path: string): void {
  let text = '';
  let hasText = false;
  const calls: Record<string, unknown>[] = [];
  blocks.forEach((block, j) => {
    const at = `${path}[${j}]`;
    if (!isJsonObject(block)) throw invalidField(at, 'a content block must be an object.');
    switch (block.type) {
      case 'text':
        text += requiredString(block, 'text', at);
        hasText = true;
        return;
      case 'tool_use': {
        const input = block.input ?? {};
        if (!isJsonObject(input)) throw invalidField(`${at}.input`, 'input must be an object.');
        calls.push({ id: requiredString(block, 'id', at), type: 'function', function: { name: requiredString(block, 'name', at), arguments: JSON.stringify(input) } });
        return;
      }
      // The model's earlier reasoning: chat completions take none back, and the answer does not depend on it.
      case 'thinking':
      case 'redacted_thinking':
        return;
      default:
        throw blockError(block.type, at, 'text, tool_use, thinking or redacted_thinking');
    }
  });
  if (!hasText && calls.length === 0) return;
  chat.push(calls.length > 0 ? { role: 'assistant', content: hasText ? text : null, tool_calls: calls } : { role: 'assistant', content: text });
}

function imagePart(block: Record<string, unknown>, path: string): ChatPart {
  const source = block.source;
  if (!isJsonObject(source)) throw invalidField(`${path}.source`, 'source must be an object.');
  if (source.type === 'base64') {
    const mediaType = requiredString(source, 'media_type', `${path}.source`);
    if (!/^image\/[a-z0-9.+-]+$/i.test(mediaType)) throw invalidField(`${path}.source.media_type`, 'media_type must be an image type (image/png, image/jpeg, image/gif, image/webp).');
    return { type: 'image_url', image_url: { url: `data:${mediaType};base64,${requiredString(source, 'data', `${path}.source`)}` } };
  }
  if (source.type === 'url') return { type: 'image_url', image_url: { url: requiredString(source, 'url', `${path}.source`) } };
  if (source.type === 'file') throw unsupportedField(`${path}.source`, "files uploaded to Anthropic's Files API are not stored by this gateway; send the image as base64 or a URL.");
  throw invalidField(`${path}.source.type`, 'type must be base64 or url.');
}

/** A tool result's content: a string, or text blocks (chat `tool` messages carry text only). */
function toolResultText(content: unknown, path: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidField(path, 'content must be a string or an array of text blocks.');
  return content
    .map((block, k) => {
      if (!isJsonObject(block)) throw invalidField(`${path}[${k}]`, 'a content block must be an object.');
      if (block.type !== 'text') throw unsupportedField(`${path}[${k}]`, 'chat-completion upstreams take text tool results only (text blocks).');
      return requiredString(block, 'text', `${path}[${k}]`);
    })
    .join('');
}

function blockError(type: unknown, path: string, allowed: string) {
  if (typeof type !== 'string') return invalidField(`${path}.type`, `type must be one of ${allowed}.`);
  if (KNOWN_UNSERVED_BLOCKS.has(type)) {
    return unsupportedField(`${path}.type`, `${quotedClientText(type)} blocks need Anthropic's platform (documents, search results, server tools), which chat-completion upstreams do not offer.`);
  }
  return invalidField(`${path}.type`, `type must be one of ${allowed}.`);
}

/** Block types of Anthropic's API that exist but cannot be passed to a chat upstream. */
const KNOWN_UNSERVED_BLOCKS = new Set([
  'document', 'search_result', 'server_tool_use', 'web_search_tool_result', 'web_fetch_tool_result', 'code_execution_tool_result',
  'bash_code_execution_tool_result', 'text_editor_code_execution_tool_result', 'mcp_tool_use', 'mcp_tool_result', 'container_upload',
]);

function requiredString(item: Record<string, unknown>, name: string, path: string): string {
  const value = item[name];
  if (typeof value !== 'string') throw invalidField(`${path}.${name}`, `${name} must be a string.`);
  return value;
}
