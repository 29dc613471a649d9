import { createHash } from 'node:crypto';
import { WEB_SEARCH_TYPES } from './fake-anthropic-search';
import { FakeRefusal as RequestError } from './fake-server';
import { fakeTokenCount } from './fake-tokens';

/** What the fake Anthropic refuses of a request (fake-anthropic.ts): headers aside, the body, with Anthropic's wording. */

export const TTL_MS = { '5m': 5 * 60_000, '1h': 60 * 60_000 } as const;
export type Ttl = keyof typeof TTL_MS;

/** One unit of the prompt in Anthropic's order (tools, then system, then messages), with its breakpoint if any. */
export interface PromptUnit {
  tokens: number;
  /** Hash of the prompt up to and including this unit (cache_control markers left out). */
  hash: string;
  ttl?: Ttl;
}

export { FakeRefusal as RequestError } from './fake-server';

/**
 * The versions `anthropic-version` may name: the two of https://docs.anthropic.com/en/api/versioning, and the one
 * @anthropic-ai/sdk 1.x sends (its client.js); any other is 400 `anthropic-version: "<v>" is not a valid version`.
 */
export const ANTHROPIC_VERSIONS = ['2023-01-01', '2023-06-01', '2026-10-21'];
/**
 * The Messages API's top-level fields (https://docs.anthropic.com/en/api/messages; `speed`: fast mode,
 * https://platform.claude.com/docs/en/build-with-claude/fast-mode); any other is refused.
 */
const MESSAGES_FIELDS = new Set([
  'model', 'messages', 'max_tokens', 'system', 'metadata', 'stop_sequences', 'stream', 'temperature', 'top_k', 'top_p', 'tools', 'tool_choice',
  'thinking', 'service_tier', 'container', 'mcp_servers', 'context_management', 'cache_control', 'output_config', 'output_format', 'inference_geo', 'speed',
]);
/**
 * Fast mode's beta (https://platform.claude.com/docs/en/build-with-claude/fast-mode): `speed` is a field of the Messages
 * API only under it, as the SDK's MessageCreateParams says ("require the fast-mode-2026-02-01 beta header for any
 * `speed` value"); without it the field is unknown, "speed: Extra inputs are not permitted", as any beta field is.
 */
export const FAST_MODE_BETA = 'fast-mode-2026-02-01';
/**
 * The models that take `inference_geo`: Claude Opus 4.6, Sonnet 4.6 and later; the older ones answer 400
 * (https://platform.claude.com/docs/en/build-with-claude/data-residency). The wording of that 400 is the fake's own.
 */
const NO_INFERENCE_GEO = new Set(['claude-opus-4-5', 'claude-sonnet-4-5', 'claude-sonnet-4-5-20250929', 'claude-haiku-4-5', 'claude-haiku-4-5-20251001', 'claude-opus-4-1']);
/** count_tokens' fields (https://docs.anthropic.com/en/api/messages-count-tokens). */
const COUNT_FIELDS = new Set(['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'mcp_servers', 'context_management', 'cache_control', 'output_config', 'output_format']);

/**
 * The body of a Messages or count_tokens request as Anthropic checks it, under the request's `anthropic-beta` values;
 * throws the RequestError it answers.
 */
export function checkBody(body: any, route: 'messages' | 'count', betas: readonly string[] = []): void {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new RequestError(400, 'invalid_request_error', 'There was an issue with the request body: it is not a JSON object.');
  }
  const fields = route === 'messages' ? MESSAGES_FIELDS : COUNT_FIELDS;
  const extra = Object.keys(body).find((field) => !fields.has(field) || (field === 'speed' && !betas.includes(FAST_MODE_BETA)));
  if (extra !== undefined) throw new RequestError(400, 'invalid_request_error', `${extra}: Extra inputs are not permitted`);
  validateBody(body, route);
  if (route === 'messages') checkPriceOptions(body);
}

/** The `anthropic-beta` header's values (comma-separated, in one header or several). */
export function betasOf(header: string | string[] | undefined): string[] {
  return [header ?? []].flat().flatMap((h) => h.split(',')).map((b) => b.trim()).filter(Boolean);
}

/**
 * The options that change the price, in the values the SDK's MessageCreateParams names: `service_tier` `auto` or
 * `standard_only` (https://docs.claude.com/en/api/service-tiers), `speed` `standard` or `fast`, `inference_geo`
 * `global` or `us` on the models that take it.
 */
function checkPriceOptions(body: any): void {
  const bad = (message: string) => new RequestError(400, 'invalid_request_error', message);
  if (body.service_tier !== undefined && body.service_tier !== 'auto' && body.service_tier !== 'standard_only') throw bad("service_tier: Input should be 'auto' or 'standard_only'");
  if (body.speed !== undefined && body.speed !== null && body.speed !== 'standard' && body.speed !== 'fast') throw bad("speed: Input should be 'standard' or 'fast'");
  if (body.inference_geo === undefined || body.inference_geo === null) return;
  if (body.inference_geo !== 'global' && body.inference_geo !== 'us') throw bad("inference_geo: Input should be 'global' or 'us'");
  if (NO_INFERENCE_GEO.has(body.model)) throw bad(`inference_geo: not supported by model ${body.model}; use Claude Opus 4.6, Sonnet 4.6 or later`);
}

// ---- validation, as Anthropic answers (400 invalid_request_error; wording from its answers) ----

const ROLES = new Set(['user', 'assistant', 'system']);

function validateBody(body: any, route: 'messages' | 'count'): void {
  const bad = (message: string) => new RequestError(400, 'invalid_request_error', message);
  if (body.model === undefined) throw bad('model: Field required');
  if (typeof body.model !== 'string') throw bad('model: Input should be a valid string');
  if (route === 'messages') {
    if (body.max_tokens === undefined) throw bad('max_tokens: Field required');
    if (!Number.isInteger(body.max_tokens)) throw bad('max_tokens: Input should be a valid integer');
    if (body.max_tokens < 1) throw bad('max_tokens: Input should be greater than or equal to 1');
    if (body.stream !== undefined && typeof body.stream !== 'boolean') throw bad('stream: Input should be a valid boolean');
  }
  if (body.messages === undefined) throw bad('messages: Field required');
  if (!Array.isArray(body.messages)) throw bad('messages: Input should be a valid list');
  if (body.messages.length === 0) throw bad('messages: at least one message is required');
  if (body.temperature !== undefined && (typeof body.temperature !== 'number' || body.temperature < 0 || body.temperature > 1)) {
    throw bad('temperature: Input should be less than or equal to 1');
  }
  if (body.stop_sequences !== undefined && (!Array.isArray(body.stop_sequences) || body.stop_sequences.some((s: unknown) => typeof s !== 'string'))) {
    throw bad('stop_sequences: Input should be a valid list of strings');
  }
  if (body.system !== undefined && typeof body.system !== 'string') {
    if (!Array.isArray(body.system)) throw bad('system: Input should be a valid string or list');
    body.system.forEach((b: any, i: number) => {
      if (b?.type !== 'text' || typeof b.text !== 'string') throw bad(`system.${i}: Input should be a text block`);
    });
  }
  const thinking = body.thinking;
  if (route === 'messages' && thinking?.type === 'enabled') {
    if (!Number.isInteger(thinking.budget_tokens) || thinking.budget_tokens < 1024) throw bad('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
    if (body.max_tokens <= thinking.budget_tokens) throw bad('`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size');
  }
  const names = new Set<string>();
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) throw bad('tools: Input should be a valid list');
    body.tools.forEach((t: any, i: number) => {
      if (typeof t?.name !== 'string' || !/^[a-zA-Z0-9_-]{1,128}$/.test(t.name)) throw bad(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
      if ((t.type === undefined || t.type === 'custom') && (typeof t.input_schema !== 'object' || t.input_schema === null)) throw bad(`tools.${i}.custom.input_schema: Field required`);
      if (WEB_SEARCH_TYPES.includes(t.type) && t.name !== 'web_search') throw bad(`tools.${i}.${t.type}.name: Input should be 'web_search'`);
      if (WEB_SEARCH_TYPES.includes(t.type) && t.max_uses !== undefined && t.max_uses !== null && !(Number.isInteger(t.max_uses) && t.max_uses > 0)) {
        throw bad(`tools.${i}.${t.type}.max_uses: Input should be greater than 0`);
      }
      if (names.has(t.name)) throw bad('tools: Tool names must be unique.');
      names.add(t.name);
    });
  }
  const messages: any[] = body.messages;
  messages.forEach((m, i) => {
    if (typeof m !== 'object' || m === null) throw bad(`messages.${i}: Input should be a valid dictionary`);
    if (!ROLES.has(m.role)) throw bad(`messages.${i}.role: Input should be 'user', 'assistant' or 'system'`);
    const last = i === messages.length - 1;
    if (typeof m.content === 'string') {
      if (m.content === '' && !(last && m.role === 'assistant')) throw bad(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`);
      return;
    }
    if (!Array.isArray(m.content)) throw bad(`messages.${i}.content: Input should be a valid string or list`);
    if (m.content.length === 0 && !(last && m.role === 'assistant')) throw bad(`messages.${i}: all messages must have non-empty content except for the optional final assistant message`);
    m.content.forEach((b: any, j: number) => {
      if (typeof b?.type !== 'string') throw bad(`messages.${i}.content.${j}.type: Field required`);
      if (b.type === 'text' && (typeof b.text !== 'string' || b.text === '')) throw bad(`messages: text content blocks must be non-empty`);
    });
  });
  // tool_use ↔ tool_result pairing: every tool_use of an assistant turn is answered in the next message.
  messages.forEach((m, i) => {
    const uses = blocksOf(m).filter((b) => b.type === 'tool_use').map((b) => String(b.id));
    const next = messages[i + 1];
    if (uses.length && m.role === 'assistant' && next) {
      const results = new Set(blocksOf(next).filter((b) => b.type === 'tool_result').map((b) => String(b.tool_use_id)));
      const missing = uses.filter((id) => !results.has(id));
      if (missing.length) {
        throw bad(`messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`);
      }
    }
    const prevUses = new Set(i > 0 ? blocksOf(messages[i - 1]).filter((b) => b.type === 'tool_use').map((b) => String(b.id)) : []);
    blocksOf(m).forEach((b, j) => {
      if (b.type === 'tool_result' && !prevUses.has(String(b.tool_use_id))) {
        throw bad(`messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`);
      }
    });
  });
}

function blocksOf(m: any): any[] {
  return Array.isArray(m?.content) ? m.content : [];
}

/**
 * The prompt as units in Anthropic's order (each tool; each system block, or the system string; each content
 * block of each message, or its string), each with its token count, the hash of the prompt up to it (model
 * included, cache_control left out) and its breakpoint's ttl. Checks the breakpoints as Anthropic does: at most
 * 4, `{type: "ephemeral", ttl?: "5m" | "1h"}`, and no 1h breakpoint after a 5m one.
 */
export function promptUnits(body: any): PromptUnit[] {
  const bad = (message: string) => new RequestError(400, 'invalid_request_error', message);
  const units: PromptUnit[] = [];
  let hash = createHash('sha256').update(`model:${body.model}`).digest('hex');
  const add = (where: string, marked: any, content: unknown, text: string) => {
    hash = createHash('sha256').update(hash).update(JSON.stringify(content)).digest('hex');
    const unit: PromptUnit = { tokens: fakeTokenCount(text), hash };
    const cc = marked?.cache_control;
    if (cc !== undefined && cc !== null) {
      if (typeof cc !== 'object' || cc.type !== 'ephemeral') throw bad(`${where}.cache_control.type: Input should be 'ephemeral'`);
      if (cc.ttl !== undefined && cc.ttl !== '5m' && cc.ttl !== '1h') throw bad(`${where}.cache_control.ttl: Input should be '5m' or '1h'`);
      unit.ttl = cc.ttl ?? '5m';
    }
    units.push(unit);
  };
  const withoutMark = (block: any) => {
    if (typeof block !== 'object' || block === null) return block;
    const { cache_control: _cc, ...rest } = block;
    return rest;
  };
  (Array.isArray(body.tools) ? body.tools : []).forEach((tool: any, i: number) => {
    const clean = withoutMark(tool);
    add(`tools.${i}`, tool, ['tool', clean], JSON.stringify(clean));
  });
  if (typeof body.system === 'string') add('system', null, ['system', body.system], body.system);
  else if (Array.isArray(body.system)) body.system.forEach((b: any, i: number) => add(`system.${i}`, b, ['system', withoutMark(b)], String(b?.text ?? '')));
  const messages: any[] = Array.isArray(body.messages) ? body.messages : [];
  messages.forEach((m, i) => {
    if (typeof m?.content === 'string') return add(`messages.${i}`, null, ['message', m.role, m.content], m.content);
    blocksOf(m).forEach((b, j) => {
      const clean = withoutMark(b);
      add(`messages.${i}.content.${j}`, b, [j === 0 ? 'message' : 'block', m.role, clean], b?.type === 'text' ? String(b.text) : JSON.stringify(clean));
    });
  });
  // A top-level cache_control marks the last block of the last message (unless it is marked already).
  const top = body.cache_control;
  if (top !== undefined && top !== null && units.length && messages.length) {
    if (typeof top !== 'object' || top.type !== 'ephemeral') throw bad(`cache_control.type: Input should be 'ephemeral'`);
    if (top.ttl !== undefined && top.ttl !== '5m' && top.ttl !== '1h') throw bad(`cache_control.ttl: Input should be '5m' or '1h'`);
    const last = units[units.length - 1];
    last.ttl ??= top.ttl ?? '5m';
  }
  const marked = units.filter((u) => u.ttl);
  if (marked.length > 4) throw bad(`A maximum of 4 blocks with cache_control may be provided. Found ${marked.length}.`);
  const firstShort = marked.findIndex((u) => u.ttl === '5m');
  if (firstShort >= 0 && marked.slice(firstShort).some((u) => u.ttl === '1h')) {
    throw bad("a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`.");
  }
  return units;
}
