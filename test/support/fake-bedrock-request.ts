import { createHash } from 'node:crypto';
import { FakeRefusal as RequestError } from './fake-server';
import { fakeTokenCount } from './fake-tokens';

/** The fake Bedrock's request side (fake-bedrock.ts): what Bedrock refuses of a Converse body, and the prompt's cache points. */

const MAX_CACHE_POINTS = 4;

export { FakeRefusal as RequestError } from './fake-server';

const bad = (message: string) => new RequestError(400, 'ValidationException', message);
// ---- validation, as Bedrock answers (400 ValidationException; wording from its answers) ----

/** Converse's request members (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html); the model id is in the path. */
const CONVERSE_FIELDS = new Set([
  'messages', 'system', 'inferenceConfig', 'toolConfig', 'guardrailConfig', 'additionalModelRequestFields', 'promptVariables',
  'additionalModelResponseFieldPaths', 'requestMetadata', 'performanceConfig', 'serviceTier',
]);

/**
 * Converse's service tiers (ServiceTier.type: "Valid Values: priority | default | flex | reserved",
 * https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ServiceTier.html), in that order.
 */
export const BEDROCK_SERVICE_TIERS = ['priority', 'default', 'flex', 'reserved'];

/**
 * The tier an answer reports in its `serviceTier` (Converse's answer, ConverseStream's metadata event): "The service
 * tier configuration for a served request is visible in API response" (https://docs.aws.amazon.com/bedrock/latest/
 * userguide/service-tiers-inference.html); the asked one, else `default` ("By default all requests are routed to
 * through standard inference").
 */
export function servedTier(body: any): string {
  return typeof body.serviceTier?.type === 'string' ? body.serviceTier.type : 'default';
}

export function validateBody(body: any): void {
  // Bedrock's wording for a key its schema does not have ("Malformed input request: #: extraneous key [stream] is not
  // permitted", as quoted in AnthropicSwiftSDK issue 19).
  const extra = Object.keys(body).find((key) => !CONVERSE_FIELDS.has(key));
  if (extra !== undefined) throw bad(`Malformed input request: #: extraneous key [${extra}] is not permitted, please reformat your input and try again.`);
  const tier = body.serviceTier;
  if (tier !== undefined) {
    if (tier === null || typeof tier !== 'object' || Array.isArray(tier)) throw new RequestError(400, 'SerializationException', 'Unable to parse request body');
    const extraKey = Object.keys(tier).find((key) => key !== 'type');
    if (extraKey !== undefined) throw bad(`Malformed input request: #/serviceTier: extraneous key [${extraKey}] is not permitted, please reformat your input and try again.`);
    if (tier.type === undefined || tier.type === null) throw bad("1 validation error detected: Value null at 'serviceTier.type' failed to satisfy constraint: Member must not be null");
    if (!BEDROCK_SERVICE_TIERS.includes(tier.type)) {
      throw bad(`1 validation error detected: Value '${tier.type}' at 'serviceTier.type' failed to satisfy constraint: Member must satisfy enum value set: [${BEDROCK_SERVICE_TIERS.join(', ')}]`);
    }
  }
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw bad('A conversation must start with a user message. Try again with a conversation that starts with a user message.');
  const config = body.inferenceConfig ?? {};
  if (config.maxTokens !== undefined && (!Number.isInteger(config.maxTokens) || config.maxTokens < 1)) {
    throw bad(`1 validation error detected: Value '${config.maxTokens}' at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1`);
  }
  if (config.temperature !== undefined && (typeof config.temperature !== 'number' || config.temperature < 0 || config.temperature > 1)) {
    throw bad(`1 validation error detected: Value '${config.temperature}' at 'inferenceConfig.temperature' failed to satisfy constraint: Member must have value less than or equal to 1`);
  }
  if (config.stopSequences !== undefined && (!Array.isArray(config.stopSequences) || config.stopSequences.some((s: unknown) => typeof s !== 'string' || s === ''))) {
    throw bad("1 validation error detected: Value at 'inferenceConfig.stopSequences' failed to satisfy constraint: Member must satisfy constraint: [Member must have length greater than or equal to 1]");
  }
  if (body.system !== undefined && !Array.isArray(body.system)) throw bad('The system field must be a list of SystemContentBlock objects.');
  let usesTools = false;
  messages.forEach((m: any, i: number) => {
    if (m?.role !== 'user' && m?.role !== 'assistant') throw bad(`1 validation error detected: Value '${m?.role}' at 'messages.${i + 1}.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]`);
    if (i === 0 && m.role !== 'user') throw bad('A conversation must start with a user message. Try again with a conversation that starts with a user message.');
    if (i > 0 && messages[i - 1].role === m.role) throw bad('A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.');
    if (!Array.isArray(m.content) || m.content.length === 0) throw bad(`The content field in the Message object at messages.${i} is empty. Add a ContentBlock object to the content field and try again.`);
    m.content.forEach((b: any, j: number) => {
      const kinds = Object.keys(b ?? {});
      if (kinds.length !== 1) throw bad(`The ContentBlock object at messages.${i}.content.${j} must set one of the following keys: text, image, toolUse, toolResult, document, video, cachePoint, reasoningContent.`);
      if ('text' in b && (typeof b.text !== 'string' || b.text.trim() === '')) {
        throw bad(`The text field in the ContentBlock object at messages.${i}.content.${j} is blank. Add text to the text field, and try again.`);
      }
      if ('image' in b) {
        if (!['png', 'jpeg', 'gif', 'webp'].includes(b.image?.format)) throw bad(`1 validation error detected: Value '${b.image?.format}' at 'messages.${i + 1}.member.content.${j + 1}.member.image.format' failed to satisfy constraint: Member must satisfy enum value set: [gif, jpeg, png, webp]`);
        if (typeof b.image.source?.bytes !== 'string' || b.image.source.bytes === '') throw bad(`The image at messages.${i}.content.${j} has no bytes.`);
      }
      if ('toolUse' in b || 'toolResult' in b) usesTools = true;
      if ('toolUse' in b && (typeof b.toolUse?.toolUseId !== 'string' || typeof b.toolUse.name !== 'string' || typeof b.toolUse.input !== 'object')) {
        throw bad(`The toolUse block at messages.${i}.content.${j} needs toolUseId, name and input.`);
      }
      if ('cachePoint' in b && b.cachePoint?.type !== 'default') throw bad(`1 validation error detected: Value at 'messages.${i + 1}.member.content.${j + 1}.member.cachePoint.type' failed to satisfy constraint: Member must satisfy enum value set: [default]`);
    });
    // Every toolUse of an assistant turn is answered by a toolResult in the next user turn.
    const uses = m.content.filter((b: any) => b?.toolUse).map((b: any) => b.toolUse.toolUseId);
    const next = messages[i + 1];
    if (m.role === 'assistant' && uses.length && next) {
      const results = new Set(next.content?.filter?.((b: any) => b?.toolResult).map((b: any) => b.toolResult.toolUseId) ?? []);
      const missing = uses.filter((id: string) => !results.has(id));
      if (missing.length) throw bad(`Expected toolResult blocks at messages.${i + 1}.content for the following Ids: ${missing.join(', ')}`);
    }
  });
  const tools = body.toolConfig?.tools;
  if (body.toolConfig !== undefined) {
    if (!Array.isArray(tools) || tools.length === 0) throw bad("1 validation error detected: Value '[]' at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1");
    tools.forEach((t: any, i: number) => {
      if (t?.cachePoint) return;
      const name = t?.toolSpec?.name;
      if (typeof name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(name)) throw bad(`1 validation error detected: Value '${name}' at 'toolConfig.tools.${i + 1}.member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+`);
      if (typeof t.toolSpec.inputSchema?.json !== 'object') throw bad(`The toolSpec at toolConfig.tools.${i} needs an inputSchema with json.`);
    });
    const choice = body.toolConfig.toolChoice;
    if (choice?.tool && !tools.some((t: any) => t?.toolSpec?.name === choice.tool.name)) throw bad(`The tool ${choice.tool.name} named in toolChoice is not in toolConfig.tools.`);
  }
  if (usesTools && body.toolConfig === undefined) throw bad('The toolConfig field must be defined when using toolUse and toolResult content blocks.');
  const thinking = body.additionalModelRequestFields?.thinking;
  if (thinking?.type === 'enabled') {
    if (!Number.isInteger(thinking.budget_tokens) || thinking.budget_tokens < 1024) throw bad('The model returned the following errors: thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
    if ((config.maxTokens ?? 4096) <= thinking.budget_tokens) throw bad('The model returned the following errors: `max_tokens` must be greater than `thinking.budget_tokens`.');
    if (config.temperature !== undefined && config.temperature !== 1) throw bad('The model returned the following errors: `temperature` may only be set to 1 when thinking is enabled.');
  }
  const points = promptPoints(body).points.length;
  if (points > MAX_CACHE_POINTS) throw bad(`The number of cachePoint blocks in the request exceeds the maximum of ${MAX_CACHE_POINTS}. Found ${points}.`);
}

/** The prompt's tokens and its cache points (each with the token count and hash of the prompt up to it), in Bedrock's order: tools, system, messages. */
export function promptPoints(body: any, modelId = ''): { total: number; points: { end: number; hash: string }[] } {
  let hash = createHash('sha256').update(`model:${modelId}`).digest('hex');
  let total = 0;
  const points: { end: number; hash: string }[] = [];
  const add = (unit: any, text: string) => {
    if (unit?.cachePoint) {
      points.push({ end: total, hash });
      return;
    }
    hash = createHash('sha256').update(hash).update(JSON.stringify(unit)).digest('hex');
    total += fakeTokenCount(text);
  };
  for (const tool of body.toolConfig?.tools ?? []) add(tool, JSON.stringify(tool?.toolSpec ?? {}));
  for (const block of Array.isArray(body.system) ? body.system : []) add(block, String(block?.text ?? ''));
  for (const m of Array.isArray(body.messages) ? body.messages : []) {
    hash = createHash('sha256').update(hash).update(`role:${m?.role}`).digest('hex');
    for (const block of Array.isArray(m?.content) ? m.content : []) {
      const text = typeof block?.text === 'string' ? block.text : block?.image ? 'image' : JSON.stringify(block);
      add(block, text);
    }
  }
  return { total, points };
}
