/** The tokens a chat request used: what its charge is computed from. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

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
  audio_seconds: string;
  input_chars: number;
  latency_ms: number;
  streamed: boolean;
  /** The deployment that served (or last failed) the request and the attempts it took; null without an upstream call. */
  deployment?: string | null;
  attempts?: number | null;
}

const USAGE_RECORD_COLUMNS: (keyof UsageRecordValues)[] = [
  'request_id', 'account_id', 'key_id', 'model', 'endpoint', 'status', 'error_code', 'prompt_tokens',
  'completion_tokens', 'audio_seconds', 'input_chars', 'latency_ms', 'streamed', 'deployment', 'attempts',
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
