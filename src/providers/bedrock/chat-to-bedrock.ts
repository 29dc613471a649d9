import type { ContentBlock, ConverseRequest, ImageFormat, SystemContentBlock, Tool, ToolChoice } from '@aws-sdk/client-bedrock-runtime';
import type { CatalogEntry } from '../../config/gateway-config.schema';
import { appendTurn as appendClaudeTurn, claudeThinking, ClaudeTurn } from '../anthropic/claude-request';
import type { ChatAssistantMessage, ChatContentPart, ChatImagePart, ChatRequestBody, ChatRequestMessage, ChatUserMessage } from '../chat-contract';
import { base64DataUrl, forcedFunctionName, functionDefinitions, imageUrlOf, isTextPart, jsonObjectOf, messageText, outputLimit, paidTier, stopStrings, toolCallsOf } from '../chat-request-parts';
import { UpstreamFailure } from '../upstream-failure';

/** A JSON value as the SDK types it (tool inputs and schemas, model-specific fields). */
type DocumentType = NonNullable<ConverseRequest['additionalModelRequestFields']>;

/** Bedrock's cache checkpoint: the prompt up to it is cached (https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html). */
const CACHE_POINT = { cachePoint: { type: 'default' } } as const;
/** Bedrock takes at most four cache checkpoints in a request. */
const MAX_CACHE_POINTS = 4;
/** The image formats Converse takes (ImageBlock.format). */
const IMAGE_FORMATS: Record<string, ImageFormat> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };
/** Bedrock's models take temperatures from 0 to 1 (Claude, Nova, Llama, Mistral), OpenAI's from 0 to 2. */
const MAX_TEMPERATURE = 1;

/** The request part of a Converse or ConverseStream call (the two take the same body). */
export type ConverseInput = ConverseRequest & { modelId: string };

type Turn = ClaudeTurn<ContentBlock>;

/**
 * A chat completion request as a Converse request (DESIGN.md section 11, docs/configuration.md "bedrock"): system
 * and developer messages into `system`, the conversation into alternating user and assistant turns (tool calls as
 * toolUse blocks, tool results as toolResult blocks leading the next user turn), `data:` images as bytes, function
 * tools into toolConfig, the output limit (the body's, else the model's max_output_tokens), temperature, top_p and
 * stop into inferenceConfig, reasoning_effort as Claude's thinking budget, and cache checkpoints where the client
 * marked `cache_control` (or, with the model's `auto_cache`, after the system prompt, the tools and the last
 * message), service_tier as serviceTier (paidTier). What Converse cannot take (n > 1, an image by URL) is a
 * 400 before any call.
 */
export function converseInput(body: ChatRequestBody, model: CatalogEntry): ConverseInput {
  if (typeof body.n === 'number' && body.n > 1) {
    throw new UpstreamFailure('rejected', `n: ${body.n} asks for several answers; Bedrock's Converse API gives one per request.`, 400);
  }
  const system: SystemContentBlock[] = [];
  const turns: Turn[] = [];
  for (const message of Array.isArray(body.messages) ? body.messages : []) appendMessage(system, turns, message);
  const maxTokens = outputLimit(body, model);
  const input: ConverseInput = { modelId: body.model, messages: turns, inferenceConfig: { maxTokens } };
  if (system.length > 0) input.system = system;
  const tools = converseTools(body.tools);
  const choice = toolChoiceOf(body.tool_choice);
  if (tools.length > 0 && choice !== 'none') input.toolConfig = { tools, ...(choice && { toolChoice: choice }) };
  const stop = stopStrings(body.stop);
  if (stop.length > 0) input.inferenceConfig!.stopSequences = stop;
  // Claude's thinking budget, as the anthropic provider sets it (claude-request.ts).
  const thinking = /claude/i.test(body.model) ? claudeThinking(body.reasoning_effort, maxTokens) : undefined;
  if (thinking) input.additionalModelRequestFields = { thinking };
  // Claude refuses temperature and top_p other than their defaults with thinking on.
  if (!thinking && typeof body.temperature === 'number') input.inferenceConfig!.temperature = Math.min(body.temperature, MAX_TEMPERATURE);
  if (!thinking && typeof body.top_p === 'number') input.inferenceConfig!.topP = body.top_p;
  // Converse's serviceTier.type (https://docs.aws.amazon.com/bedrock/latest/userguide/service-tiers-inference.html).
  const tier = paidTier(body.service_tier);
  if (tier) input.serviceTier = { type: tier };
  return model.auto_cache && countCachePoints(input) === 0 ? withCachePoints(input) : keepLastCachePoints(input);
}

function appendMessage(system: SystemContentBlock[], turns: Turn[], message: ChatRequestMessage): void {
  switch (message.role) {
    case 'system':
    case 'developer': {
      const text = messageText(message.content);
      if (text !== '') system.push({ text });
      if (asksCache(message.content)) system.push(CACHE_POINT);
      return;
    }
    case 'assistant':
      return appendTurn(turns, 'assistant', assistantBlocks(message));
    case 'tool': {
      const text = messageText(message.content);
      const result: ContentBlock = { toolResult: { toolUseId: String(message.tool_call_id ?? ''), content: text === '' ? [] : [{ text }] } };
      return appendTurn(turns, 'user', asksCache(message.content) ? [result, CACHE_POINT] : [result]);
    }
    case 'function':
      // The legacy function role carries no call id: its result cannot be tied to a toolUse block.
      return appendTurn(turns, 'user', textBlock(messageText(message.content)));
    default:
      return appendTurn(turns, 'user', userBlocks(message.content));
  }
}

/** Converse wants user and assistant turns to alternate, for every model, as Claude does (claude-request.ts). */
function appendTurn(turns: Turn[], role: Turn['role'], blocks: ContentBlock[]): void {
  appendClaudeTurn(turns, role, blocks, (block) => block.toolResult !== undefined);
}

function textBlock(text: string): ContentBlock[] {
  return text === '' ? [] : [{ text }];
}

function userBlocks(content: ChatUserMessage['content']): ContentBlock[] {
  if (typeof content === 'string') return textBlock(content);
  if (!Array.isArray(content)) return [];
  const blocks: ContentBlock[] = [];
  for (const part of content) {
    if (isTextPart(part)) blocks.push(...textBlock(part.text));
    else if (part?.type === 'image_url') blocks.push(imageBlock(part.image_url));
    else continue;
    if (isMarked(part)) blocks.push(CACHE_POINT);
  }
  return blocks;
}

/** A chat image part as bytes: Converse takes no image URLs, so only `data:` URLs of its four formats go. */
function imageBlock(imageUrl: ChatImagePart['image_url']): ContentBlock {
  const data = base64DataUrl(imageUrlOf(imageUrl));
  if (!data) throw new UpstreamFailure('rejected', "Bedrock's Converse API takes images as data: URLs (base64), not as links.", 400);
  const format = IMAGE_FORMATS[data.mediaType.toLowerCase()];
  if (!format) throw new UpstreamFailure('rejected', `Bedrock's Converse API takes png, jpeg, gif and webp images, not ${data.mediaType}.`, 400);
  return { image: { format, source: { bytes: Buffer.from(data.data, 'base64') } } };
}

function assistantBlocks(message: ChatAssistantMessage): ContentBlock[] {
  const blocks = textBlock(messageText(message.content));
  for (const call of toolCallsOf(message)) {
    const fn = call?.function ?? {};
    blocks.push({ toolUse: { toolUseId: String(call?.id ?? ''), name: String(fn.name ?? ''), input: (jsonObjectOf(fn.arguments) ?? {}) as DocumentType } });
  }
  if (blocks.length > 0 && asksCache(message.content)) blocks.push(CACHE_POINT);
  return blocks;
}

/** A content part the client marked for caching (Anthropic's `cache_control`, as some chat clients send it on parts). */
function isMarked(part: ChatContentPart | null | undefined): boolean {
  return part?.cache_control !== undefined && part.cache_control !== null;
}

function asksCache(content: ChatRequestMessage['content']): boolean {
  return Array.isArray(content) && content.some(isMarked);
}

function converseTools(tools: ChatRequestBody['tools']): Tool[] {
  return functionDefinitions(tools).map((fn) => {
    const schema = (fn.parameters && typeof fn.parameters === 'object' ? fn.parameters : { type: 'object', properties: {} }) as DocumentType;
    return { toolSpec: { name: String(fn.name ?? ''), ...(typeof fn.description === 'string' && fn.description !== '' && { description: fn.description }), inputSchema: { json: schema } } };
  });
}

/** chat's tool_choice as Converse's; 'none' says to send no toolConfig (Converse has no "none"). */
function toolChoiceOf(choice: ChatRequestBody['tool_choice']): ToolChoice | 'none' | undefined {
  if (choice === 'none') return 'none';
  if (choice === 'auto') return { auto: {} };
  if (choice === 'required') return { any: {} };
  const name = forcedFunctionName(choice);
  return name === undefined ? undefined : { tool: { name } };
}

type Blocks = { cachePoint?: unknown }[];

function countCachePoints(input: ConverseInput): number {
  return cacheBlockLists(input).reduce((sum, blocks) => sum + blocks.filter((b) => b.cachePoint !== undefined).length, 0);
}

/** The block lists that may hold cache points, in the prompt's order: tools, system, messages. */
function cacheBlockLists(input: ConverseInput): Blocks[] {
  return [input.toolConfig?.tools ?? [], input.system ?? [], ...(input.messages ?? []).map((m) => m.content ?? [])] as Blocks[];
}

/**
 * `auto_cache` (DESIGN.md section 11): a request that carries no cache point gets one after its tools, after its
 * system prompt and after the last message's content (three, within Bedrock's four).
 */
export function withCachePoints(input: ConverseInput): ConverseInput {
  const marked: ConverseInput = { ...input };
  if (input.toolConfig?.tools?.length) marked.toolConfig = { ...input.toolConfig, tools: [...input.toolConfig.tools, CACHE_POINT] };
  if (input.system?.length) marked.system = [...input.system, CACHE_POINT];
  const messages = input.messages ?? [];
  const last = messages[messages.length - 1];
  if (last?.content?.length) marked.messages = [...messages.slice(0, -1), { ...last, content: [...last.content, CACHE_POINT] }];
  return marked;
}

/** The client's cache points past Bedrock's four: the last four stay (they cover the longest prefixes). */
function keepLastCachePoints(input: ConverseInput): ConverseInput {
  let extra = countCachePoints(input) - MAX_CACHE_POINTS;
  if (extra <= 0) return input;
  for (const blocks of cacheBlockLists(input)) {
    for (let i = 0; i < blocks.length && extra > 0; i++) {
      if (blocks[i].cachePoint !== undefined) {
        blocks.splice(i--, 1);
        extra--;
      }
    }
  }
  return input;
}
