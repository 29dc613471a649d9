import type { ClassTokens } from './cost-oracle';
import type { GeminiUsageMetadata } from './fake-gemini';

/**
 * Gemini's usageMetadata as Google documents it, and what each answer must cost, written out by hand: the oracle of
 * the Gemini usage tests, never the gateway's mapping (src/providers/gemini/gemini-wire.ts). What the fields mean
 * (Gemini API reference, GenerateContentResponse.UsageMetadata, https://ai.google.dev/api/generate-content, and
 * @google/genai's GenerateContentResponseUsageMetadata):
 * - promptTokenCount: the prompt; "when cached_content is set, this also includes the number of tokens in the cached
 *   content", so cachedContentTokenCount is a part of it, priced as cached input;
 * - toolUsePromptTokenCount: "the results from tool executions, which are provided back to the model as input":
 *   input, beside the prompt;
 * - candidatesTokenCount and thoughtsTokenCount: the answer and the thoughts, counted apart, since totalTokenCount "is
 *   the sum of prompt_token_count, candidates_token_count, tool_use_prompt_token_count, and thoughts_token_count";
 *   both are output ("Output price (including thinking tokens)", https://ai.google.dev/gemini-api/docs/pricing).
 */

/** Gemini 2.5 Flash's prices, USD per million tokens (µUSD per token): the figures below are at these. */
export const FLASH_PRICES = { input: 0.3, output: 2.5, cachedInput: 0.075 };

export interface DocumentedUsage {
  name: string;
  usageMetadata: GeminiUsageMetadata;
  /** The chat usage the answer reports: prompt and completion totals, cached and reasoning parts of them. */
  chat: { prompt: number; completion: number; cached: number; reasoning: number };
  /** The charge at FLASH_PRICES, µUSD, rounded up once. */
  micros: bigint;
}

export const DOCUMENTED_USAGE: DocumentedUsage[] = [
  {
    // The example answer of the countTokens reference (https://ai.google.dev/api/tokens): "prompt_token_count: 11,
    // candidates_token_count: 73, total_token_count: 84".
    name: 'the countTokens reference example',
    usageMetadata: { promptTokenCount: 11, candidatesTokenCount: 73, totalTokenCount: 84, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 11 }] },
    chat: { prompt: 11, completion: 73, cached: 0, reasoning: 0 },
    // 11 × 0.3 + 73 × 2.5 = 3.3 + 182.5 = 185.8 → 186
    micros: 186n,
  },
  {
    // The same answer from a thinking model: 512 thoughts besides the 73 answer tokens (total 11 + 73 + 512).
    name: 'a thinking model answer',
    usageMetadata: { promptTokenCount: 11, candidatesTokenCount: 73, thoughtsTokenCount: 512, totalTokenCount: 596, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 11 }] },
    chat: { prompt: 11, completion: 585, cached: 0, reasoning: 512 },
    // 11 × 0.3 + (73 + 512) × 2.5 = 3.3 + 1,462.5 = 1,465.8 → 1,466
    micros: 1466n,
  },
  {
    // Cached content of 3,072 tokens within a 4,096-token prompt, 200 tokens of tool results, 100 answer tokens and
    // 50 thoughts (total 4,096 + 100 + 200 + 50).
    name: 'an answer from cached content, with tool results and thoughts',
    usageMetadata: {
      promptTokenCount: 4096,
      cachedContentTokenCount: 3072,
      toolUsePromptTokenCount: 200,
      candidatesTokenCount: 100,
      thoughtsTokenCount: 50,
      totalTokenCount: 4446,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: 4096 }],
    },
    chat: { prompt: 4296, completion: 150, cached: 3072, reasoning: 50 },
    // (4,096 − 3,072 + 200) × 0.3 + 3,072 × 0.075 + (100 + 50) × 2.5 = 367.2 + 230.4 + 375 = 972.6 → 973
    micros: 973n,
  },
];

/**
 * A usageMetadata in the cost oracle's classes, by the meanings above; the usage tests check it against every
 * hand-written example of DOCUMENTED_USAGE before the other tests price the fake's answers with it.
 */
export function documentedClasses(usage: GeminiUsageMetadata): ClassTokens {
  return {
    prompt: usage.promptTokenCount + (usage.toolUsePromptTokenCount ?? 0),
    cached: usage.cachedContentTokenCount ?? 0,
    completion: (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0),
  };
}
