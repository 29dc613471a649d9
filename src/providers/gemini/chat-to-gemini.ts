import type { CatalogEntry } from '../../config/gateway-config.schema';
import type { ChatAssistantMessage, ChatImagePart, ChatRequestBody, ChatRequestMessage, ChatUserMessage } from '../chat-contract';
import { base64DataUrl, forcedFunctionName, functionDefinitions, imageUrlOf, isTextPart, jsonObjectOf, messageText, outputLimit, paidTier, stopStrings, toolCallsOf } from '../chat-request-parts';
import { GeminiContent, GeminiPart, GeminiRequest } from './gemini-wire';

type GenerationConfig = GeminiRequest['generationConfig'];
type FunctionDeclaration = NonNullable<GeminiRequest['tools']>[number]['functionDeclarations'][number];
type FunctionResponse = NonNullable<GeminiPart['functionResponse']>['response'];

/**
 * chat's reasoning_effort as a thinking budget in tokens (DESIGN.md section 11, docs/configuration.md "gemini"):
 * within Gemini 2.5 Flash's range (0 to 24,576; Pro's starts at 128), so every level is valid on both. `none` turns
 * thinking off (budget 0: Flash models only; Pro refuses it, and that 400 passes through). Without reasoning_effort
 * no thinkingConfig is sent: the model's own default (dynamic thinking) holds.
 */
export const THINKING_BUDGET: Record<string, number> = { minimal: 512, low: 1024, medium: 8192, high: 24576, xhigh: 24576 };

/** fileData's mimeType for a URL whose extension says it (Gemini's supported image and document types). */
const MIME_BY_EXTENSION: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  heic: 'image/heic',
  heif: 'image/heif',
  pdf: 'application/pdf',
};

/**
 * A chat completion request as a generateContent request (DESIGN.md section 11, docs/configuration.md "gemini"):
 * system and developer messages into systemInstruction; the conversation into `contents` of role user and model
 * (consecutive turns of one role joined); images as inlineData (data: URLs) or fileData; assistant tool calls as
 * functionCall parts and tool results as functionResponse parts of a user turn (named after the call they
 * answer); function tools with their full JSON Schema (parametersJsonSchema); tool_choice as
 * functionCallingConfig; the output limit (the body's, else the model's max_output_tokens), temperature,
 * top_p, stop, n, seed, penalties, JSON output and reasoning_effort in generationConfig; service_tier (priority, fast,
 * flex) as serviceTier.
 */
export function geminiRequest(body: ChatRequestBody, model: CatalogEntry): GeminiRequest {
  const system: GeminiPart[] = [];
  const contents: GeminiContent[] = [];
  /** The function named by each tool-call id seen so far: a tool message names only the call it answers. */
  const callNames = new Map<string, string>();
  for (const message of Array.isArray(body.messages) ? body.messages : []) {
    if (message && typeof message === 'object') appendMessage(system, contents, callNames, message);
  }
  const request: GeminiRequest = { contents, generationConfig: generationConfig(body, model) };
  const tier = paidTier(body.service_tier);
  if (tier) request.serviceTier = tier;
  if (system.length > 0) request.systemInstruction = { parts: system };
  const declarations = functionDeclarations(body.tools);
  if (declarations.length > 0) {
    request.tools = [{ functionDeclarations: declarations }];
    const config = functionCallingConfig(body.tool_choice);
    if (config) request.toolConfig = { functionCallingConfig: config };
  }
  return request;
}

function generationConfig(body: ChatRequestBody, model: CatalogEntry): GenerationConfig {
  const config: GenerationConfig = {};
  config.maxOutputTokens = outputLimit(body, model);
  if (typeof body.temperature === 'number') config.temperature = body.temperature;
  if (typeof body.top_p === 'number') config.topP = body.top_p;
  const stop = stopStrings(body.stop);
  if (stop.length > 0) config.stopSequences = stop;
  if (typeof body.n === 'number' && body.n > 1) config.candidateCount = body.n;
  if (typeof body.seed === 'number') config.seed = body.seed;
  if (typeof body.presence_penalty === 'number') config.presencePenalty = body.presence_penalty;
  if (typeof body.frequency_penalty === 'number') config.frequencyPenalty = body.frequency_penalty;
  const format = body.response_format;
  if (format?.type === 'json_object') config.responseMimeType = 'application/json';
  if (format?.type === 'json_schema') {
    config.responseMimeType = 'application/json';
    const schema = format.json_schema?.schema;
    if (schema && typeof schema === 'object') config.responseJsonSchema = schema;
  }
  const effort = body.reasoning_effort;
  if (effort === 'none') config.thinkingConfig = { thinkingBudget: 0 };
  else if (typeof effort === 'string' && THINKING_BUDGET[effort] !== undefined) config.thinkingConfig = { thinkingBudget: THINKING_BUDGET[effort], includeThoughts: true };
  return config;
}

function appendMessage(system: GeminiPart[], contents: GeminiContent[], callNames: Map<string, string>, message: ChatRequestMessage): void {
  switch (message.role) {
    case 'system':
    case 'developer': {
      const text = messageText(message.content);
      if (text !== '') system.push({ text });
      return;
    }
    case 'assistant':
      return appendTurn(contents, 'model', modelParts(message, callNames));
    case 'tool': {
      const id = String(message.tool_call_id ?? '');
      const name = callNames.get(id) ?? (typeof message.name === 'string' ? message.name : id);
      return appendTurn(contents, 'user', [{ functionResponse: { name, response: responseOf(messageText(message.content)) } }]);
    }
    case 'function':
      // The legacy function role names its function.
      return appendTurn(contents, 'user', [{ functionResponse: { name: String(message.name ?? ''), response: responseOf(messageText(message.content)) } }]);
    default:
      return appendTurn(contents, 'user', userParts(message.content));
  }
}

/** Gemini wants turns to alternate between user and model: consecutive messages of one role join one turn. */
function appendTurn(contents: GeminiContent[], role: 'user' | 'model', parts: GeminiPart[]): void {
  if (parts.length === 0) return;
  const last = contents[contents.length - 1];
  if (last?.role === role && last.parts) last.parts.push(...parts);
  else contents.push({ role, parts });
}

function userParts(content: ChatUserMessage['content']): GeminiPart[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  if (!Array.isArray(content)) return [];
  const parts: GeminiPart[] = [];
  for (const part of content) {
    if (isTextPart(part) && part.text !== '') parts.push({ text: part.text });
    else if (part?.type === 'image_url') {
      const image = imagePart(part.image_url);
      if (image) parts.push(image);
    }
  }
  return parts;
}

/** A chat image part: a base64 `data:` URL inline, any other URL as fileData (with its type when the extension says it). */
function imagePart(imageUrl: ChatImagePart['image_url']): GeminiPart | null {
  const url = imageUrlOf(imageUrl);
  if (url === '') return null;
  const data = base64DataUrl(url);
  if (data) return { inlineData: { mimeType: data.mediaType, data: data.data } };
  const extension = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(url)?.[1]?.toLowerCase();
  const mimeType = extension ? MIME_BY_EXTENSION[extension] : undefined;
  return { fileData: { fileUri: url, ...(mimeType && { mimeType }) } };
}

function modelParts(message: ChatAssistantMessage, callNames: Map<string, string>): GeminiPart[] {
  const parts: GeminiPart[] = [];
  const text = messageText(message.content);
  if (text !== '') parts.push({ text });
  for (const call of toolCallsOf(message)) {
    const fn = call?.function ?? {};
    const name = String(fn.name ?? '');
    if (typeof call?.id === 'string') callNames.set(call.id, name);
    parts.push({ functionCall: { name, args: jsonObjectOf(fn.arguments) ?? {} } });
  }
  return parts;
}

/** A tool result as functionResponse.response: the result's JSON object as it is, any other text under `result`. */
function responseOf(text: string): FunctionResponse {
  return jsonObjectOf(text) ?? { result: text };
}

/** Function tools as declarations; parametersJsonSchema takes full JSON Schema, which `parameters` (OpenAPI's subset) does not. */
function functionDeclarations(tools: ChatRequestBody['tools']): FunctionDeclaration[] {
  return functionDefinitions(tools).map((fn) => ({
    name: String(fn.name ?? ''),
    ...(typeof fn.description === 'string' && { description: fn.description }),
    ...(typeof fn.parameters === 'object' && fn.parameters !== null && { parametersJsonSchema: fn.parameters }),
  }));
}

/** chat's tool_choice as functionCallingConfig: auto → AUTO, required → ANY, none → NONE, a named function → ANY with that name allowed. */
function functionCallingConfig(choice: ChatRequestBody['tool_choice']): { mode: 'AUTO' | 'ANY' | 'NONE'; allowedFunctionNames?: string[] } | undefined {
  if (choice === 'auto') return { mode: 'AUTO' };
  if (choice === 'required') return { mode: 'ANY' };
  if (choice === 'none') return { mode: 'NONE' };
  const name = forcedFunctionName(choice);
  return name === undefined ? undefined : { mode: 'ANY', allowedFunctionNames: [name] };
}
