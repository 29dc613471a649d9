import { isJsonObject } from '../../common/json/scalar-fields';
import { invalidField, unsupportedField } from '../../errors';
import type { ChatAssistantMessage, ChatImagePart, ChatRequestMessage, ChatTextPart, ChatToolCall } from '../chat-contract';
import { isObject, quoted, requiredString } from './client-fields';
import type { ContentBlockParam, ImageBlockParam, MessageParam, MessagesRequestBody, ToolResultBlockParam } from './messages-wire';

/** Claude Code sends its system prompt as several text blocks: they read as paragraphs of one prompt. */
const SYSTEM_BLOCK_SEPARATOR = '\n\n';

/**
 * The chat messages of a Messages request (the Messages route over a chat upstream, DESIGN.md section 11):
 * `system` first, as a system message, then the conversation in order. The client's body is checked as it is
 * read: a 400 names the first field at fault.
 */
export function chatMessagesOf(system: MessagesRequestBody['system'], messages: MessageParam[] | undefined): ChatRequestMessage[] {
  const chat: ChatRequestMessage[] = [];
  const systemText = system === undefined || system === null ? '' : systemPrompt(system, 'system');
  if (systemText !== '') chat.push({ role: 'system', content: systemText });
  if (!Array.isArray(messages) || messages.length === 0) throw invalidField('messages', 'messages must be a non-empty array of messages.');
  messages.forEach((message, i) => appendMessage(chat, message, `messages[${i}]`));
  // A conversation of thinking blocks only leaves nothing to send: chat completions need at least one message.
  if (chat.length === 0) throw invalidField('messages', 'messages must hold at least one text, image, tool_use or tool_result block.');
  return chat;
}

/** System text: a string, or text blocks read as paragraphs of one prompt (the top-level `system`, or a system-role message's content). */
function systemPrompt(system: string | ContentBlockParam[], path: string): string {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) throw invalidField(path, `${path === 'system' ? 'system' : 'content'} must be a string or an array of text blocks.`);
  return system
    .map((block, i) => {
      if (!isObject(block) || block.type !== 'text') throw invalidField(`${path}[${i}]`, 'a system block must be {"type": "text", "text": …}.');
      return requiredString(block.text, 'text', `${path}[${i}]`);
    })
    .join(SYSTEM_BLOCK_SEPARATOR);
}

function appendMessage(chat: ChatRequestMessage[], message: MessageParam, path: string): void {
  if (!isObject(message)) throw invalidField(path, 'a message must be an object.');
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
function appendUserBlocks(chat: ChatRequestMessage[], blocks: ContentBlockParam[], path: string): void {
  const parts: (ChatTextPart | ChatImagePart)[] = [];
  blocks.forEach((block, j) => {
    const at = `${path}[${j}]`;
    if (!isObject(block)) throw invalidField(at, 'a content block must be an object.');
    switch (block.type) {
      case 'text':
        parts.push({ type: 'text', text: requiredString(block.text, 'text', at) });
        return;
      case 'image':
        parts.push(imagePart(block, at));
        return;
      case 'tool_result':
        chat.push({ role: 'tool', tool_call_id: requiredString(block.tool_use_id, 'tool_use_id', at), content: toolResultText(block.content, `${at}.content`) });
        return;
      default:
        throw blockError(block.type, at, 'text, image or tool_result');
    }
  });
  if (parts.length === 0) return;
  const texts = parts.filter((part): part is ChatTextPart => part.type === 'text');
  chat.push({ role: 'user', content: texts.length === parts.length ? texts.map((part) => part.text).join('') : parts });
}

/** An assistant turn: its text as the content, its tool_use blocks as tool calls; thinking blocks are passed over. */
function appendAssistantBlocks(chat: ChatRequestMessage[], blocks: ContentBlockParam[], path: string): void {
  let text = '';
  let hasText = false;
  const calls: ChatToolCall[] = [];
  blocks.forEach((block, j) => {
    const at = `${path}[${j}]`;
    if (!isObject(block)) throw invalidField(at, 'a content block must be an object.');
    switch (block.type) {
      case 'text':
        text += requiredString(block.text, 'text', at);
        hasText = true;
        return;
      case 'tool_use': {
        const input: unknown = block.input ?? {};
        if (!isJsonObject(input)) throw invalidField(`${at}.input`, 'input must be an object.');
        const id = requiredString(block.id, 'id', at);
        calls.push({ id, type: 'function', function: { name: requiredString(block.name, 'name', at), arguments: JSON.stringify(input) } });
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
  const turn: ChatAssistantMessage = calls.length > 0 ? { role: 'assistant', content: hasText ? text : null, tool_calls: calls } : { role: 'assistant', content: text };
  chat.push(turn);
}

function imagePart(block: ImageBlockParam, path: string): ChatImagePart {
  const source = block.source;
  if (!isObject(source)) throw invalidField(`${path}.source`, 'source must be an object.');
  if (source.type === 'base64') {
    const mediaType = requiredString(source.media_type, 'media_type', `${path}.source`);
    if (!/^image\/[a-z0-9.+-]+$/i.test(mediaType)) throw invalidField(`${path}.source.media_type`, 'media_type must be an image type (image/png, image/jpeg, image/gif, image/webp).');
    return { type: 'image_url', image_url: { url: `data:${mediaType};base64,${requiredString(source.data, 'data', `${path}.source`)}` } };
  }
  if (source.type === 'url') return { type: 'image_url', image_url: { url: requiredString(source.url, 'url', `${path}.source`) } };
  if (source.type === 'file') throw unsupportedField(`${path}.source`, "files uploaded to Anthropic's Files API are not stored by this gateway; send the image as base64 or a URL.");
  throw invalidField(`${path}.source.type`, 'type must be base64 or url.');
}

/** A tool result's content: a string, or text blocks (chat `tool` messages carry text only). */
function toolResultText(content: ToolResultBlockParam['content'], path: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidField(path, 'content must be a string or an array of text blocks.');
  return content
    .map((block, k) => {
      if (!isObject(block)) throw invalidField(`${path}[${k}]`, 'a content block must be an object.');
      if (block.type !== 'text') throw unsupportedField(`${path}[${k}]`, 'chat-completion upstreams take text tool results only (text blocks).');
      return requiredString(block.text, 'text', `${path}[${k}]`);
    })
    .join('');
}

function blockError(type: unknown, path: string, allowed: string) {
  if (typeof type !== 'string') return invalidField(`${path}.type`, `type must be one of ${allowed}.`);
  if (KNOWN_UNSERVED_BLOCKS.has(type)) {
    return unsupportedField(`${path}.type`, `${quoted(type)} blocks need Anthropic's platform (documents, search results, server tools), which chat-completion upstreams do not offer.`);
  }
  return invalidField(`${path}.type`, `type must be one of ${allowed}.`);
}

/** Block types of Anthropic's API that exist but cannot be passed to a chat upstream. */
const KNOWN_UNSERVED_BLOCKS: ReadonlySet<string> = new Set<ContentBlockParam['type']>([
  'document', 'search_result', 'server_tool_use', 'web_search_tool_result', 'web_fetch_tool_result', 'code_execution_tool_result',
  'bash_code_execution_tool_result', 'text_editor_code_execution_tool_result', 'mcp_tool_use', 'mcp_tool_result', 'container_upload',
]);
