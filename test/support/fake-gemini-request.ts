import { createHash } from 'node:crypto';
import type { GeminiReply } from './fake-gemini';
import { fakeTokenCount, tokenPieces } from './fake-tokens';

/** The fake Gemini's request side (fake-gemini.ts): what Gemini refuses of a body, the prompt's tokens, the reply cut as asked. */

/** Gemini's count for an image of at most 384 px on both sides (https://ai.google.dev/gemini-api/docs/tokens). */
export const IMAGE_TOKENS = 258;

export class RequestError extends Error {
  constructor(
    readonly code: number,
    readonly status: string,
    message: string,
    readonly details?: unknown[],
  ) {
    super(message);
  }
}

const TOP_LEVEL = new Set(['contents', 'tools', 'toolConfig', 'safetySettings', 'systemInstruction', 'generationConfig', 'cachedContent', 'model', 'labels', 'serviceTier', 'service_tier']);

/**
 * The request's service tier (https://ai.google.dev/gemini-api/docs/priority-inference, .../flex-inference): the
 * top-level `service_tier` ("set the service_tier field in the request body to priority"; JSON also takes its camelCase
 * name, which @google/genai sends: `serviceTier`), spelled as Google's pages spell it: `priority` (the SDKs'
 * ServiceTier enum: unspecified, flex, standard, priority), `FLEX` (the REST example) or `SERVICE_TIER_PRIORITY`.
 */
const TIER_SPELLING = /^(?:unspecified|standard|flex|priority|(?:SERVICE_TIER_)?(?:UNSPECIFIED|STANDARD|FLEX|PRIORITY))$/;

/** The tier a request asks for, lower case without its prefix (`priority`), or undefined when it names none. */
export function askedTier(body: any): string | undefined {
  const tier = body.serviceTier ?? body.service_tier;
  return typeof tier === 'string' ? tier.replace(/^SERVICE_TIER_/, '').toLowerCase() : undefined;
}

/**
 * What Gemini's `x-gemini-service-tier` answer header says served the request: `priority` when asked and granted,
 * `standard` when priority capacity was short ("Validate for graceful downgrade: if …headers.get("x-gemini-service-tier")
 * == "standard": Priority limit exceeded, processed at Standard tier", the priority-inference page), `flex` when asked,
 * else `standard` ("The default tier is standard if the field is omitted").
 */
export function servedTier(body: any, priorityShort: boolean): 'priority' | 'flex' | 'standard' {
  const asked = askedTier(body);
  if (asked === 'priority') return priorityShort ? 'standard' : 'priority';
  return asked === 'flex' ? 'flex' : 'standard';
}
const GENERATION_CONFIG = new Set([
  'stopSequences', 'responseMimeType', 'responseSchema', 'responseJsonSchema', 'responseModalities', 'candidateCount', 'maxOutputTokens', 'temperature',
  'topP', 'topK', 'seed', 'presencePenalty', 'frequencyPenalty', 'responseLogprobs', 'logprobs', 'enableEnhancedCivicAnswers', 'speechConfig', 'thinkingConfig',
  'mediaResolution', 'imageConfig',
]);

// ---- the answer ----

/** The reply's parts, cut by stopSequences (finish STOP) and maxOutputTokens (finish MAX_TOKENS), with their tokens. */
export function outputFor(reply: GeminiReply, config: any): { parts: any[]; tokens: number; finishReason: string } {
  let budget = Number.isInteger(config.maxOutputTokens) ? config.maxOutputTokens : 8192;
  const parts: any[] = [];
  let text = reply.text;
  let stopped = false;
  for (const stop of Array.isArray(config.stopSequences) ? config.stopSequences : []) {
    const at = text.indexOf(stop);
    if (at >= 0) {
      text = text.slice(0, at);
      stopped = true;
    }
  }
  const textTokens = fakeTokenCount(text);
  if (textTokens > budget) {
    const kept = cut(text, budget);
    return { parts: kept ? [{ text: kept }] : [], tokens: budget, finishReason: 'MAX_TOKENS' };
  }
  budget -= textTokens;
  if (text) parts.push({ text });
  let tokens = textTokens;
  if (!stopped) {
    for (const call of reply.functionCalls ?? []) {
      const n = fakeTokenCount(call.name) + fakeTokenCount(JSON.stringify(call.args));
      if (n > budget) return { parts, tokens: tokens + budget, finishReason: 'MAX_TOKENS' };
      budget -= n;
      tokens += n;
      parts.push({ functionCall: { ...(call.id && { id: call.id }), name: call.name, args: call.args } });
    }
  }
  return { parts, tokens, finishReason: stopped ? 'STOP' : (reply.finishReason ?? 'STOP') };
}

/** The first `limit` tokens of a text. */
export function cut(text: string, limit: number): string {
  return tokenPieces(text).slice(0, limit).join('');
}

// ---- the prompt: units in Gemini's order, each with its tokens and the hash of the prompt up to it ----

interface PromptUnit {
  tokens: number;
  hash: string;
}

function partTokens(part: any): number {
  if (typeof part?.text === 'string') return fakeTokenCount(part.text);
  if (part?.inlineData || part?.fileData) return IMAGE_TOKENS;
  if (part?.functionCall) return fakeTokenCount(String(part.functionCall.name)) + fakeTokenCount(JSON.stringify(part.functionCall.args ?? {}));
  if (part?.functionResponse) return fakeTokenCount(String(part.functionResponse.name)) + fakeTokenCount(JSON.stringify(part.functionResponse.response ?? {}));
  return fakeTokenCount(JSON.stringify(part ?? ''));
}

export function promptUnits(body: any): PromptUnit[] {
  const units: PromptUnit[] = [];
  let hash = '';
  const add = (content: unknown, tokens: number) => {
    hash = createHash('sha256').update(hash).update(JSON.stringify(content)).digest('hex');
    units.push({ tokens, hash });
  };
  const system = body.systemInstruction;
  if (system) add(['system', system], (Array.isArray(system.parts) ? system.parts : []).reduce((s: number, p: any) => s + partTokens(p), 0));
  for (const tool of Array.isArray(body.tools) ? body.tools : []) add(['tool', tool], fakeTokenCount(JSON.stringify(tool)));
  for (const content of Array.isArray(body.contents) ? body.contents : []) {
    add(['content', content], (Array.isArray(content?.parts) ? content.parts : []).reduce((s: number, p: any) => s + partTokens(p), 0));
  }
  return units;
}

// ---- validation, as Gemini answers (400 INVALID_ARGUMENT) ----

export function validateBody(body: any): void {
  const bad = (message: string) => new RequestError(400, 'INVALID_ARGUMENT', message);
  for (const name of Object.keys(body)) {
    if (!TOP_LEVEL.has(name)) throw bad(`Invalid JSON payload received. Unknown name "${name}": Cannot find field.`);
  }
  if (!Array.isArray(body.contents) || body.contents.length === 0) throw bad('* GenerateContentRequest.contents: contents is not specified\n');
  body.contents.forEach((content: any, i: number) => {
    if (content?.role !== undefined && content.role !== 'user' && content.role !== 'model') throw bad('Please use a valid role: user, model.');
    if (!Array.isArray(content?.parts) || content.parts.length === 0) throw bad(`* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.\n`);
    content.parts.forEach((part: any, j: number) => {
      if (part?.functionResponse !== undefined && (typeof part.functionResponse?.name !== 'string' || part.functionResponse.name === '')) {
        throw bad(`* GenerateContentRequest.contents[${i}].parts[${j}].function_response.name: Name cannot be empty.\n`);
      }
      if (part?.functionCall !== undefined && (typeof part.functionCall?.name !== 'string' || part.functionCall.name === '')) {
        throw bad(`* GenerateContentRequest.contents[${i}].parts[${j}].function_call.name: Name cannot be empty.\n`);
      }
      if (part?.inlineData !== undefined && (typeof part.inlineData?.mimeType !== 'string' || typeof part.inlineData?.data !== 'string')) {
        throw bad(`* GenerateContentRequest.contents[${i}].parts[${j}].inline_data.mime_type: mime_type cannot be empty.\n`);
      }
    });
  });
  const system = body.systemInstruction;
  if (system !== undefined && (!Array.isArray(system?.parts) || system.parts.some((p: any) => typeof p?.text !== 'string'))) {
    throw bad('* GenerateContentRequest.system_instruction.parts: only text parts are supported in system_instruction.\n');
  }
  for (const [t, tool] of (Array.isArray(body.tools) ? body.tools : []).entries()) {
    for (const [d, decl] of (Array.isArray(tool?.functionDeclarations) ? tool.functionDeclarations : []).entries()) {
      if (typeof decl?.name !== 'string' || !/^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$/.test(decl.name)) {
        throw bad(`* GenerateContentRequest.tools[${t}].function_declarations[${d}].name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:) or dashes (-), with a maximum length of 64.\n`);
      }
      if (decl.parameters !== undefined && decl.parametersJsonSchema !== undefined) {
        throw bad(`* GenerateContentRequest.tools[${t}].function_declarations[${d}]: parameters and parameters_json_schema cannot both be set.\n`);
      }
    }
  }
  for (const field of ['serviceTier', 'service_tier']) {
    const tier = body[field];
    if (tier === undefined || (typeof tier === 'string' && TIER_SPELLING.test(tier))) continue;
    // Google's answer to a value outside an enum, with its field violation (as Vertex answers a tier it does not take,
    // github.com/googleapis/python-genai/issues/2433).
    const message = `Invalid value at 'service_tier' (type.googleapis.com/google.ai.generativelanguage.v1beta.ServiceTier), ${JSON.stringify(tier)}`;
    throw new RequestError(400, 'INVALID_ARGUMENT', message, [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'service_tier', description: message }] }]);
  }
  const mode = body.toolConfig?.functionCallingConfig?.mode;
  if (mode !== undefined && !['AUTO', 'ANY', 'NONE', 'VALIDATED', 'MODE_UNSPECIFIED'].includes(mode)) {
    throw bad(`Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), "${mode}"`);
  }
  const config = body.generationConfig;
  if (config !== undefined) {
    for (const name of Object.keys(config)) {
      if (!GENERATION_CONFIG.has(name)) throw bad(`Invalid JSON payload received. Unknown name "${name}" at 'generation_config': Cannot find field.`);
    }
    if (config.temperature !== undefined && (typeof config.temperature !== 'number' || config.temperature < 0 || config.temperature > 2)) {
      throw bad('* GenerateContentRequest.generation_config.temperature: temperature must be in the range [0.0, 2.0]\n');
    }
    if (config.maxOutputTokens !== undefined && (!Number.isInteger(config.maxOutputTokens) || config.maxOutputTokens < 1)) {
      throw bad('* GenerateContentRequest.generation_config.max_output_tokens: max_output_tokens must be positive.\n');
    }
    if (config.candidateCount !== undefined && (!Number.isInteger(config.candidateCount) || config.candidateCount < 1 || config.candidateCount > 8)) {
      throw bad('* GenerateContentRequest.generation_config.candidate_count: candidate_count must be in the range [1, 8]\n');
    }
    if (config.stopSequences !== undefined && (!Array.isArray(config.stopSequences) || config.stopSequences.length > 5)) {
      throw bad('* GenerateContentRequest.generation_config.stop_sequences: at most 5 stop sequences are allowed.\n');
    }
    const budget = config.thinkingConfig?.thinkingBudget;
    if (budget !== undefined && (!Number.isInteger(budget) || budget < -1 || budget > 32768)) {
      throw bad(`The thinking budget ${budget} is invalid. Please choose a value between -1 and 32768.`);
    }
  }
}
