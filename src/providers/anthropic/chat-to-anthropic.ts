import { isJsonObject } from '../../common/json/scalar-fields';
import type { CatalogEntry } from '../../config/gateway-config.schema';
import type { ChatAssistantMessage, ChatImagePart, ChatRequestBody, ChatRequestMessage, ChatUserMessage } from '../chat-contract';
import { base64DataUrl, forcedFunctionName, functionDefinitions, imageUrlOf, isTextPart, jsonObjectOf, messageText, outputLimit, stopStrings, toolCallsOf } from '../chat-request-parts';
import { UpstreamFailure } from '../upstream-failure';
import { AnthropicRequest, ContentBlock } from './anthropic-wire';
import { appendTurn as appendClaudeTurn, claudeThinking, ClaudeTurn } from './claude-request';
import type { CustomTool, MessagesToolChoice } from './messages-wire';

type Turn = ClaudeTurn<ContentBlock>;

/** Anthropic's temperature runs from 0 to 1, OpenAI's from 0 to 2. */
const MAX_TEMPERATURE = 1;

/**
 * A chat completion request as a Messages request (DESIGN.md section 11, docs/configuration.md "anthropic"):
 * system and developer messages into `system`, the conversation into alternating user and assistant turns
 * (tool calls as tool_use blocks, tool results as tool_result blocks of the next user turn), images, function
 * tools, tool_choice, stop, the output limit (required upstream: the body's, else the model's
 * max_output_tokens), temperature, top_p, user, and reasoning_effort as a thinking budget. What chat asks and
 * Anthropic cannot do (`n` > 1) is a 400 before any upstream call. Fields that only tune OpenAI's models
 * (seed, penalties, logprobs, response_format) are not sent.
 */
export function anthropicRequest(body: ChatRequestBody, model: CatalogEntry): AnthropicRequest {
  if (typeof body.n === 'number' && body.n > 1) {
    throw new UpstreamFailure('rejected', `n: ${body.n} asks for several answers; Anthropic's models give one per request.`, 400);
  }
  const system: ContentBlock[] = [];
  const turns: Turn[] = [];
  for (const message of Array.isArray(body.messages) ? body.messages : []) appendMessage(system, turns, message);
  const maxTokens = outputLimit(body, model);
  const request: AnthropicRequest = { model: body.model, max_tokens: maxTokens, messages: turns };
  if (system.length > 0) request.system = system;
  const tools = anthropicTools(body.tools);
  if (tools.length > 0) {
    request.tools = tools;
    const choice = anthropicToolChoice(body.tool_choice, body.parallel_tool_calls);
    if (choice === 'none') delete request.tools;
    else if (choice) request.tool_choice = choice;
  }
  const stop = stopStrings(body.stop);
  if (stop.length > 0) request.stop_sequences = stop;
  const thinking = claudeThinking(body.reasoning_effort, maxTokens);
  if (thinking) request.thinking = thinking;
  // Anthropic refuses temperature and top_p other than their defaults with thinking on.
  if (!thinking && typeof body.temperature === 'number') request.temperature = Math.min(body.temperature, MAX_TEMPERATURE);
  if (!thinking && typeof body.top_p === 'number') request.top_p = body.top_p;
  if (typeof body.user === 'string' && body.user !== '') request.metadata = { user_id: body.user };
  if (body.stream === true) request.stream = true;
  // Anthropic's price options a chat client may set (the route refused those its model does not price: DESIGN.md
  // section 12.2): fast mode (with its beta header: anthropic.provider.ts) and the region of inference.
  if (typeof body.speed === 'string') request.speed = body.speed;
  if (typeof body.inference_geo === 'string') request.inference_geo = body.inference_geo;
  return request;
}

function appendMessage(system: ContentBlock[], turns: Turn[], message: ChatRequestMessage): void {
  switch (message.role) {
    case 'system':
    case 'developer': {
      const text = messageText(message.content);
      if (text !== '') system.push({ type: 'text', text });
      return;
    }
    case 'assistant':
      return appendTurn(turns, 'assistant', assistantBlocks(message));
    case 'tool':
      return appendTurn(turns, 'user', [{ type: 'tool_result', tool_use_id: String(message.tool_call_id ?? ''), content: messageText(message.content) }]);
    case 'function':
      // The legacy function role carries no call id: its result cannot be tied to a tool_use block.
      return appendTurn(turns, 'user', [{ type: 'text', text: messageText(message.content) }]);
    default:
      return appendTurn(turns, 'user', userBlocks(message.content));
  }
}

function appendTurn(turns: Turn[], role: Turn['role'], blocks: ContentBlock[]): void {
  appendClaudeTurn(turns, role, blocks, (block) => block.type === 'tool_result');
}

function userBlocks(content: ChatUserMessage['content']): ContentBlock[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  const blocks: ContentBlock[] = [];
  for (const part of content) {
    if (isTextPart(part) && part.text !== '') blocks.push({ type: 'text', text: part.text });
    else if (part?.type === 'image_url') {
      const image = imageBlock(part.image_url);
      if (image) blocks.push(image);
    }
  }
  return blocks;
}

/** A chat image part: a `data:` URL as base64, any other URL as a url source. */
function imageBlock(imageUrl: ChatImagePart['image_url']): ContentBlock | null {
  const url = imageUrlOf(imageUrl);
  if (url === '') return null;
  const data = base64DataUrl(url);
  if (data) return { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
  return { type: 'image', source: { type: 'url', url } };
}

function assistantBlocks(message: ChatAssistantMessage): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  const text = messageText(message.content);
  if (text !== '') blocks.push({ type: 'text', text });
  for (const call of toolCallsOf(message)) {
    const fn = call?.function ?? {};
    blocks.push({ type: 'tool_use', id: String(call?.id ?? ''), name: String(fn.name ?? ''), input: jsonObjectOf(fn.arguments) ?? {} });
  }
  return blocks;
}

function anthropicTools(tools: ChatRequestBody['tools']): CustomTool[] {
  return functionDefinitions(tools).map((fn) => ({
    name: String(fn.name ?? ''),
    ...(typeof fn.description === 'string' && { description: fn.description }),
    input_schema: fn.parameters && typeof fn.parameters === 'object' ? fn.parameters : { type: 'object', properties: {} },
  }));
}

/** chat's tool_choice as Anthropic's; 'none' says to send no tools (older models refuse `{type: "none"}`). */
function anthropicToolChoice(choice: ChatRequestBody['tool_choice'], parallel: ChatRequestBody['parallel_tool_calls']): MessagesToolChoice | 'none' | undefined {
  const disable = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === 'none') return 'none';
  if (choice === 'required') return { type: 'any', ...disable };
  const name = forcedFunctionName(choice);
  if (name !== undefined) return { type: 'tool', name, ...disable };
  return parallel === false ? { type: 'auto', ...disable } : undefined;
}

/**
 * `auto_cache` (DESIGN.md section 11): a request that carries no `cache_control` anywhere gets breakpoints on
 * its last tool, its last system block and the last content block of its last message (three, within
 * Anthropic's four). A string system or content becomes one text block to carry it. The request is copied
 * along the marked paths: a client's body, kept for another deployment, is not changed.
 */
export function withCacheBreakpoints(request: Record<string, unknown>): Record<string, unknown> {
  if (JSON.stringify(request).includes('"cache_control"')) return request;
  const marked = { ...request };
  const mark = (blocks: unknown[]): unknown[] => {
    const copy = [...blocks];
    const last = copy[copy.length - 1];
    if (last && typeof last === 'object' && !Array.isArray(last)) copy[copy.length - 1] = { ...last, cache_control: { type: 'ephemeral' } };
    return copy;
  };
  if (Array.isArray(request.tools) && request.tools.length > 0) marked.tools = mark(request.tools);
  const system = typeof request.system === 'string' && request.system !== '' ? [{ type: 'text', text: request.system }] : request.system;
  if (Array.isArray(system) && system.length > 0) marked.system = mark(system);
  const messages = Array.isArray(request.messages) ? request.messages : [];
  const last: unknown = messages[messages.length - 1];
  if (isJsonObject(last)) {
    const content = typeof last.content === 'string' && last.content !== '' ? [{ type: 'text', text: last.content }] : last.content;
    if (Array.isArray(content) && content.length > 0) marked.messages = [...messages.slice(0, -1), { ...last, content: mark(content) }];
  }
  return marked;
}
