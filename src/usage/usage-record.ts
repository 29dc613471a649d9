/**
 * The tokens a chat request used, by class (DESIGN.md section 10): what its charge is computed from
 * (src/billing/request-cost.ts). Each subtotal is part of its total, and together they never exceed it.
 */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  /** Parts of promptTokens: read from the prompt cache, written to it, audio. */
  cachedTokens: number;
  cacheWriteTokens: number;
  /** Part of cacheWriteTokens: written to the cache for an hour (Anthropic's 1-hour TTL; the rest: 5 minutes). */
  cacheWrite1hTokens: number;
  audioInputTokens: number;
  /** Parts of completionTokens: audio, and reasoning (billed as output, not shown in the answer). */
  audioOutputTokens: number;
  reasoningTokens: number;
}

/** No tokens at all: a request that used none (or whose upstream call failed). */
export const NO_TOKENS: TokenUsage = Object.freeze({
  promptTokens: 0,
  completionTokens: 0,
  cachedTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  audioInputTokens: 0,
  audioOutputTokens: 0,
  reasoningTokens: 0,
});

/** A model id as sent is kept to this many UTF-16 units: enough for any real id, bounded for junk. */
export const MAX_RECORDED_MODEL_LENGTH = 64;

/** A usage record's values, keyed by column; its cost is added by its writer (0, or the settlement's charge). */
export interface UsageRecordValues {
  request_id: string;
  account_id: string;
  key_id: string;
  model: string | null;
  endpoint: string;
  status: number;
  error_code: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  reasoning_tokens: number;
  audio_input_tokens: number;
  audio_output_tokens: number;
  audio_seconds: string;
  input_chars: number;
  latency_ms: number;
  streamed: boolean;
  /** The deployment that served (or last failed) the request and the attempts it took; null without an upstream call. */
  deployment?: string | null;
  attempts?: number | null;
  /** The price variants applied (their `when`, DESIGN.md section 12.2); null: the flat prices. */
  price_variants?: object[] | null;
  /** The server tools the upstream ran: uses, and their fees in µUSD; null: none. */
  tool_uses?: Record<string, ToolUse> | null;
}

/** A server tool's part of a charge: its uses and their fees, µUSD as decimal text. */
export interface ToolUse {
  uses: number;
  micros: string;
}

/** How a charge was priced beyond its tokens (request-cost.ts RequestCost): what its usage record keeps. */
export interface PricedAs {
  variants: object[];
  tools: { name: string; uses: number; micros: bigint }[];
}

const USAGE_RECORD_COLUMNS: (keyof UsageRecordValues)[] = [
  'request_id', 'account_id', 'key_id', 'model', 'endpoint', 'status', 'error_code', 'prompt_tokens',
  'completion_tokens', 'cached_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'reasoning_tokens', 'audio_input_tokens',
  'audio_output_tokens', 'audio_seconds', 'input_chars', 'latency_ms', 'streamed', 'deployment', 'attempts', 'price_variants', 'tool_uses',
];

/**
 * The INSERT of usage records: their values (UsageRecordValues as JSON) from the SQL expression `values`,
 * their cost from the SQL expression `cost`, both over the optional `from` (a FROM item, joined first).
 * ON CONFLICT DO NOTHING: a request has one record, however often its write is attempted.
 */
export function usageRecordInsert(values: string, cost: string, from?: string): string {
  const source = `jsonb_populate_record(NULL::usage_records, ${values}) AS r`;
  return (
    `INSERT INTO usage_records (${USAGE_RECORD_COLUMNS.join(', ')}, cost_micros) ` +
    `SELECT ${USAGE_RECORD_COLUMNS.map((c) => `r.${c}`).join(', ')}, ${cost} FROM ${from ? `${from} CROSS JOIN LATERAL ${source}` : source} ` +
    `ON CONFLICT (request_id) DO NOTHING`
  );
}
