import { randomBytes } from 'node:crypto';
import type { AnswerPriceFacts, ChatUsage } from '../chat-contract';

/**
 * Google's Gemini API on the wire (https://ai.google.dev/api/generate-content), the parts the `gemini` provider
 * writes and reads. Fields are optional where Gemini leaves them out and unknown fields are kept: readers of
 * upstream data still check what they read.
 */

/** One part of a Content: text (a thought when `thought` is true), inline or file data, a function call or response. */
export interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { fileUri: string; mimeType?: string };
  functionCall?: { id?: string; name?: string; args?: Record<string, unknown> };
  functionResponse?: { id?: string; name: string; response: Record<string, unknown> };
  [extra: string]: unknown;
}

export interface GeminiContent {
  role?: 'user' | 'model';
  parts?: GeminiPart[];
}

/** generateContent's request body (the model is in the path). */
export interface GeminiRequest {
  contents: GeminiContent[];
  systemInstruction?: { parts: GeminiPart[] };
  tools?: { functionDeclarations: Record<string, unknown>[] }[];
  toolConfig?: { functionCallingConfig: { mode: 'AUTO' | 'ANY' | 'NONE'; allowedFunctionNames?: string[] } };
  generationConfig: Record<string, unknown>;
  /** The tier asked for (GeminiServiceTier); none: standard. */
  serviceTier?: GeminiServiceTier;
}

/**
 * Gemini's paid tiers, as @google/genai sends them in `serviceTier` (https://ai.google.dev/gemini-api/docs/priority-inference,
 * https://ai.google.dev/gemini-api/docs/flex-inference: "set the service_tier field in the request body to priority").
 */
export type GeminiServiceTier = 'priority' | 'flex';

/**
 * The tier that served an answer, from its `x-gemini-service-tier` header (`standard` when a priority request was
 * downgraded: https://ai.google.dev/gemini-api/docs/priority-inference), in lower case; undefined without one.
 */
export function geminiPriceFacts(headers: Readonly<Record<string, string | string[] | undefined>>): AnswerPriceFacts | undefined {
  const value = headers['x-gemini-service-tier'];
  const tier = (Array.isArray(value) ? value[0] : value)?.trim().toLowerCase();
  return tier ? { service_tier: tier } : undefined;
}

export interface GeminiUsage {
  /** Every prompt token, the cached content's included. */
  promptTokenCount?: number;
  cachedContentTokenCount?: number;
  candidatesTokenCount?: number;
  toolUsePromptTokenCount?: number;
  thoughtsTokenCount?: number;
  totalTokenCount?: number;
  [extra: string]: unknown;
}

export interface GeminiCandidate {
  content?: GeminiContent;
  finishReason?: string;
  index?: number;
  [extra: string]: unknown;
}

/** generateContent's answer, and each event of streamGenerateContent. */
export interface GeminiResponse {
  candidates?: GeminiCandidate[];
  promptFeedback?: { blockReason?: string; [extra: string]: unknown };
  usageMetadata?: GeminiUsage;
  modelVersion?: string;
  responseId?: string;
  [extra: string]: unknown;
}

/** Finish reasons that mean Gemini withheld the answer (https://ai.google.dev/api/generate-content#FinishReason). */
const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY']);

/** Gemini's finishReason as chat's finish_reason; `tool_calls` when the candidate called functions and stopped. */
export function finishReasonOf(reason: unknown, calledFunctions: boolean): string {
  if (reason === 'MAX_TOKENS') return 'length';
  if (typeof reason === 'string' && FILTERED.has(reason)) return 'content_filter';
  return calledFunctions ? 'tool_calls' : 'stop';
}

/**
 * Gemini's usage in chat's token classes (DESIGN.md section 11): the prompt is promptTokenCount (which already
 * holds the cached content) plus toolUsePromptTokenCount; cachedContentTokenCount is `cached_tokens`;
 * the completion is candidatesTokenCount plus thoughtsTokenCount, which is also `reasoning_tokens`. A count that
 * is missing or not a whole number reads 0.
 */
export function chatUsageOfGemini(usage: GeminiUsage | undefined): ChatUsage {
  const prompt = count(usage?.promptTokenCount) + count(usage?.toolUsePromptTokenCount);
  const cached = Math.min(count(usage?.cachedContentTokenCount), prompt);
  const thoughts = count(usage?.thoughtsTokenCount);
  const completion = count(usage?.candidatesTokenCount) + thoughts;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached },
    completion_tokens_details: { reasoning_tokens: thoughts },
  };
}

/** A tool-call id for a function call Gemini gave none (chat clients need one to answer it). */
export function newCallId(): string {
  return `call_${randomBytes(12).toString('hex')}`;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0;
}
