import type { CatalogEntry } from '../config/gateway-config.schema';
import { PriceOptions } from '../config/price-options';
import type { PriceCondition } from '../config/price-variants.schema';
import type { AnswerPriceFacts } from '../providers/chat-contract';
import { TokenUsage } from '../usage/usage-record';
import { matchingVariants, splitUnpriced, variantConditions } from './price-variants';
import { ceilDiv, TokenPrices, tokenPrices, variantPrices } from './token-prices';
import { toolFeeMicros } from './tool-fees';

/** What a request costs, and its tokens by class (what its usage record shows). */
export interface RequestCost {
  usage: TokenUsage;
  /** The formula's cost, rounded up once, plus the server tools' fees; the charge is this, at most the hold. */
  micros: bigint;
  /** The `when` of each price variant applied, in catalog order (none: the flat prices). */
  variants: PriceCondition[];
  /** Each server tool the upstream ran, its uses and their fees in µUSD (uses × the entry's `tool_fees`). */
  tools: ToolCharge[];
  /** What the answer reported that the entry does not price (`service_tier:priority`, `tool:web_fetch`): charged as standard, or nothing. */
  unpriced: string[];
}

export interface ToolCharge {
  name: string;
  uses: number;
  micros: bigint;
}

/** How a request was priced: the options it asked for, and what its answer reported (which wins, option by option). */
export interface PricedBy {
  asked?: PriceOptions;
  answered?: AnswerPriceFacts;
}

/** A report of more uses than this is not believable (the hold covers max_uses, at most 10,000 by default). */
const MAX_TOOL_USES = 1_000_000;

/** The usage record's token columns are `integer`: a larger total is not believable, and could not be stored. */
export const MAX_TOKEN_COUNT = 2_147_483_647;

/**
 * The cost of a chat request, the one function every charge goes through (JSON answers, streams, the
 * Responses API, aborted streams, retried deployments; DESIGN.md section 10, docs/billing.md "Token
 * classes"): the whole usage block the upstream reported, priced under the request's catalog entry.
 *
 *   (prompt − cached − cache_write − audio_in) × input + cached × cached_input
 *   + (cache_write − cache_write_1h) × cache_write + cache_write_1h × cache_write_1h
 *   + audio_in × audio_input + (completion − audio_out) × output + audio_out × audio_output
 *
 * in pico-USD, exactly, then rounded up to the micro-dollar once. Null when the block has no valid totals:
 * the gateway then counts the tokens itself, and prices its count here, as a block of the two totals.
 */
export function requestCost(usageBlock: unknown, model: CatalogEntry, by: PricedBy = {}): RequestCost | null {
  const usage = tokenUsageOf(usageBlock);
  if (!usage) return null;
  if (model.price_variants === undefined && model.tool_fees === undefined && by.answered === undefined) {
    return { usage, micros: costMicros(usage, tokenPrices(model)), variants: [], tools: [], unpriced: [] };
  }
  const { answered = {}, asked = {} } = by;
  const { options, unpriced } = splitUnpriced(model, {
    service_tier: answered.service_tier ?? asked.service_tier,
    speed: answered.speed ?? asked.speed,
    inference_geo: answered.inference_geo ?? asked.inference_geo,
  });
  const mask = matchingVariants(model, options, usage.promptTokens);
  const tools = toolCharges(model, answered.tool_uses, unpriced);
  const micros = tools.reduce((sum, tool) => sum + tool.micros, costMicros(usage, variantPrices(model, mask)));
  return { usage, micros, variants: variantConditions(model, mask), tools, unpriced };
}

/**
 * The fee of each server tool the answer reports uses of: uses × the entry's fee, exact µUSD. A tool the entry
 * does not price (it should have been withdrawn) costs nothing, and is named in `unpriced`.
 */
function toolCharges(model: CatalogEntry, uses: Record<string, number> | undefined, unpriced: string[]): ToolCharge[] {
  if (!uses) return [];
  const charges: ToolCharge[] = [];
  for (const [name, count] of Object.entries(uses)) {
    if (!Number.isInteger(count) || count <= 0) continue;
    const fee = toolFeeMicros(model, name);
    if (fee === undefined) {
      unpriced.push(`tool:${name}`);
      continue;
    }
    const n = Math.min(count, MAX_TOOL_USES);
    charges.push({ name, uses: n, micros: fee * BigInt(n) });
  }
  return charges;
}

/**
 * The tokens by class of a usage block: chat's (`prompt_tokens`, `completion_tokens`,
 * `prompt_tokens_details.{cached_tokens, cache_write_tokens, cache_write_1h_tokens, audio_tokens}`,
 * `completion_tokens_details.{audio_tokens, reasoning_tokens}`) or the Responses API's (`input_tokens`,
 * `output_tokens`, `input_tokens_details.{cached_tokens, cache_write_tokens, cache_write_1h_tokens}`,
 * `output_tokens_details.reasoning_tokens`). Null unless both totals are whole numbers from 0 to
 * MAX_TOKEN_COUNT. A subtotal that is missing, negative, not a whole number or not a number counts 0; the
 * subtotals are cut to fit their total, in order (cached, cache-write, audio; then audio, reasoning), each
 * to what the ones before it left; the 1-hour cache writes (a gateway extension, a part of the cache writes)
 * are cut to fit the cache writes as cut.
 */
export function tokenUsageOf(block: unknown): TokenUsage | null {
  if (!isObject(block)) return null;
  if (isTotal(block.prompt_tokens) && isTotal(block.completion_tokens)) {
    const input = detailsOf(block.prompt_tokens_details);
    const output = detailsOf(block.completion_tokens_details);
    return classified(
      block.prompt_tokens,
      [input.cached_tokens, input.cache_write_tokens, input.audio_tokens],
      input.cache_write_1h_tokens,
      block.completion_tokens,
      [output.audio_tokens, output.reasoning_tokens],
    );
  }
  if (isTotal(block.input_tokens) && isTotal(block.output_tokens)) {
    const input = detailsOf(block.input_tokens_details);
    const output = detailsOf(block.output_tokens_details);
    return classified(block.input_tokens, [input.cached_tokens, input.cache_write_tokens, 0], input.cache_write_1h_tokens, block.output_tokens, [
      0,
      output.reasoning_tokens,
    ]);
  }
  return null;
}

/**
 * Whether a usage block tells its 1-hour cache writes apart (carries `cache_write_1h_tokens` in its prompt or
 * input details, as the native Anthropic provider does; an OpenAI-shaped upstream never does): the answers
 * that can show the split (Messages' `cache_creation`) show it only then.
 */
export function separatesCacheWrite1h(block: unknown): boolean {
  if (!isObject(block)) return false;
  const details = isObject(block.prompt_tokens_details) ? block.prompt_tokens_details : block.input_tokens_details;
  return isObject(details) && details.cache_write_1h_tokens !== undefined;
}

/** A request's cost by token class, in pico-USD × the prices' scale, exactly: the terms of the formula of `requestCost` (statements show them). */
export interface ClassPicos {
  input: bigint;
  cachedInput: bigint;
  cacheWrite: bigint;
  cacheWrite1h: bigint;
  audioInput: bigint;
  output: bigint;
  audioOutput: bigint;
}

/** Each class's tokens at its price, on counts that fit their totals (the plain input and output: what the parts leave). */
export function costPicosByClass(usage: TokenUsage, prices: TokenPrices): ClassPicos {
  const plainInput = usage.promptTokens - usage.cachedTokens - usage.cacheWriteTokens - usage.audioInputTokens;
  return {
    input: BigInt(plainInput) * prices.input,
    cachedInput: BigInt(usage.cachedTokens) * prices.cachedInput,
    cacheWrite: BigInt(usage.cacheWriteTokens - usage.cacheWrite1hTokens) * prices.cacheWrite,
    cacheWrite1h: BigInt(usage.cacheWrite1hTokens) * prices.cacheWrite1h,
    audioInput: BigInt(usage.audioInputTokens) * prices.audioInput,
    output: BigInt(usage.completionTokens - usage.audioOutputTokens) * prices.output,
    audioOutput: BigInt(usage.audioOutputTokens) * prices.audioOutput,
  };
}

/** The formula of `requestCost` on counts that fit their totals: the classes' sum, rounded up once. */
export function costMicros(usage: TokenUsage, prices: TokenPrices): bigint {
  const c = costPicosByClass(usage, prices);
  return ceilDiv(c.input + c.cachedInput + c.cacheWrite + c.cacheWrite1h + c.audioInput + c.output + c.audioOutput, prices.scale * 1_000_000n);
}

/**
 * The hold's amount: the most a request with at most `promptTokens` prompt tokens and `outputTokens` output
 * tokens can cost, every prompt token at `inputPicos` and every output token at `outputPicos` (the highest
 * prices of their classes, TokenPrices.holdInput/holdOutput), rounded as `requestCost` rounds. SQL's
 * billing_cost_micros is the same arithmetic (the database decides the holds that do not fit a lease).
 */
export function worstCaseMicros(promptTokens: number, outputTokens: number, inputPicos: bigint, outputPicos: bigint, fixedPicos = 0n): bigint {
  return ceilDiv(BigInt(promptTokens) * inputPicos + BigInt(outputTokens) * outputPicos + fixedPicos, 1_000_000n);
}

function classified(prompt: number, promptParts: unknown[], cacheWrite1h: unknown, completion: number, completionParts: unknown[]): TokenUsage {
  const [cachedTokens, cacheWriteTokens, audioInputTokens] = cutToFit(prompt, promptParts);
  const [cacheWrite1hTokens] = cutToFit(cacheWriteTokens, [cacheWrite1h]);
  const [audioOutputTokens, reasoningTokens] = cutToFit(completion, completionParts);
  return { promptTokens: prompt, completionTokens: completion, cachedTokens, cacheWriteTokens, cacheWrite1hTokens, audioInputTokens, audioOutputTokens, reasoningTokens };
}

/** Each subtotal (0 unless a whole number ≥ 0) cut to what the total has left after the ones before it. */
function cutToFit(total: number, subtotals: unknown[]): number[] {
  let left = total;
  return subtotals.map((value) => {
    const part = typeof value === 'number' && Number.isInteger(value) && value > 0 ? Math.min(value, left) : 0;
    left -= part;
    return part;
  });
}

function isTotal(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_TOKEN_COUNT;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function detailsOf(value: unknown): Record<string, unknown> {
  return isObject(value) ? value : {};
}
