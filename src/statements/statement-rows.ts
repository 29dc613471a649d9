import { costPicosByClass } from '../billing/request-cost';
import { variantPrices } from '../billing/token-prices';
import type { CatalogEntry } from '../config/gateway-config.schema';
import { canonicalJson } from '../common/json/canonical-json';
import type { ToolUse } from '../usage/usage-record';

/** One ledger movement as read for a statement: the entry, and its request's usage record when it is a charge. */
export interface LedgerMovementRow {
  id: string;
  created_at: Date;
  kind: string;
  amount_micros: string;
  balance_after_micros: string;
  request_id: string | null;
  key_id: string | null;
  model: string | null;
  endpoint: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  cache_write_tokens: number | null;
  cache_write_1h_tokens: number | null;
  audio_input_tokens: number | null;
  audio_output_tokens: number | null;
  reasoning_tokens: number | null;
  /** The price variants the charge applied (their `when`) and the server tools' uses and µUSD (DESIGN.md 12.2). */
  price_variants: object[] | null;
  tool_uses: Record<string, ToolUse> | null;
}

/** The token classes a statement shows, each with its own price (docs/billing.md, "Token classes"). */
export const CLASSES = ['input', 'cached_input', 'cache_write_5m', 'cache_write_1h', 'audio_input', 'output', 'audio_output'] as const;
export type TokenClass = (typeof CLASSES)[number];

/** A movement as a statement shows it (JSON; CSV flattens it). */
export interface StatementMovement {
  id: string;
  at: string;
  kind: string;
  amount_micros: string;
  balance_after_micros: string;
  request_id: string | null;
  key_id: string | null;
  model: string | null;
  endpoint: string | null;
  /** Tokens by class (a charge's); the reasoning tokens are a part of the output, shown apart. */
  tokens: (Record<TokenClass, number> & { reasoning: number }) | null;
  /** The price variants the charge applied, by their `when` (DESIGN.md section 12.2); empty: the flat prices. */
  price_variants: object[];
  /**
   * Each class's cost in µUSD, exact (6 decimals, more when a variant's multiplier needs them), at the catalog's
   * prices of today under the variants applied, and each server tool's fees (`tool:web_search`) as charged; the
   * classes' sum rounded up once, plus the tools', is the charge, unless the prices changed since or the charge
   * was capped at its hold. Null for a model no longer in the catalog.
   */
  micros_by_class: (Record<TokenClass, string> & Record<string, string>) | null;
}

export function statementMovement(row: LedgerMovementRow, model: CatalogEntry | undefined): StatementMovement {
  const tokens = row.request_id && row.prompt_tokens !== null ? classTokens(row) : null;
  return {
    id: String(row.id),
    at: row.created_at.toISOString(),
    kind: row.kind,
    amount_micros: String(row.amount_micros),
    balance_after_micros: String(row.balance_after_micros),
    request_id: row.request_id,
    key_id: row.key_id,
    model: row.model,
    endpoint: row.endpoint,
    tokens,
    price_variants: row.price_variants ?? [],
    micros_by_class: tokens && model?.kind === 'chat' ? { ...microsByClass(row, model), ...toolMicros(row.tool_uses) } : null,
  };
}

/** Each server tool's fees as charged, `tool:<name>` → µUSD with six decimals. */
function toolMicros(tools: Record<string, ToolUse> | null): Record<string, string> {
  const micros: Record<string, string> = {};
  for (const [name, use] of Object.entries(tools ?? {})) micros['tool:' + name] = BigInt(use.micros).toString() + '.000000';
  return micros;
}

/** The bitmask of the entry's variants whose `when` the record names (variants since removed from the catalog count for nothing). */
function appliedMask(model: CatalogEntry, applied: object[] | null): number {
  if (!applied || applied.length === 0 || !model.price_variants) return 0;
  const named = new Set(applied.map(canonicalJson));
  let mask = 0;
  model.price_variants.forEach(({ when }, i) => {
    if (named.has(canonicalJson({ ...when }))) mask |= 1 << i;
  });
  return mask;
}

function classTokens(row: LedgerMovementRow): Record<TokenClass, number> & { reasoning: number } {
  const n = (v: number | null) => v ?? 0;
  const cacheWrite = n(row.cache_write_tokens);
  return {
    input: n(row.prompt_tokens) - n(row.cached_tokens) - cacheWrite - n(row.audio_input_tokens),
    cached_input: n(row.cached_tokens),
    cache_write_5m: cacheWrite - n(row.cache_write_1h_tokens),
    cache_write_1h: n(row.cache_write_1h_tokens),
    audio_input: n(row.audio_input_tokens),
    output: n(row.completion_tokens) - n(row.audio_output_tokens),
    audio_output: n(row.audio_output_tokens),
    reasoning: n(row.reasoning_tokens),
  };
}

/** The one cost function's terms (billing's costPicosByClass), as exact decimal µUSD. */
function microsByClass(row: LedgerMovementRow, model: CatalogEntry): Record<TokenClass, string> {
  const prices = variantPrices(model, appliedMask(model, row.price_variants));
  const c = costPicosByClass(
    {
      promptTokens: row.prompt_tokens ?? 0,
      completionTokens: row.completion_tokens ?? 0,
      cachedTokens: row.cached_tokens ?? 0,
      cacheWriteTokens: row.cache_write_tokens ?? 0,
      cacheWrite1hTokens: row.cache_write_1h_tokens ?? 0,
      audioInputTokens: row.audio_input_tokens ?? 0,
      audioOutputTokens: row.audio_output_tokens ?? 0,
      reasoningTokens: row.reasoning_tokens ?? 0,
    },
    prices,
  );
  const micros = (scaled: bigint) => picosToMicros(scaled, prices.scale);
  return {
    input: micros(c.input),
    cached_input: micros(c.cachedInput),
    cache_write_5m: micros(c.cacheWrite),
    cache_write_1h: micros(c.cacheWrite1h),
    audio_input: micros(c.audioInput),
    output: micros(c.output),
    audio_output: micros(c.audioOutput),
  };
}

/**
 * Pico-USD × `scale` (a power of 10^6: token-prices.ts) as exact µUSD: six decimals ("12.345678"), more only when
 * a variant's multiplier made finer parts ("12.3456785").
 */
function picosToMicros(scaled: bigint, scale: bigint): string {
  const denominator = scale * 1_000_000n;
  const decimals = denominator.toString().length - 1;
  const digits = (scaled % denominator).toString().padStart(decimals, '0');
  let end = digits.length;
  while (end > 6 && digits[end - 1] === '0') end--;
  const fraction = digits.slice(0, end);
  const whole = scaled / denominator;
  return `${whole}.${fraction}`;
}

/** The CSV columns, in order: the movement's fields, then tokens and µUSD by class. */
export const CSV_COLUMNS = [
  'row',
  'id',
  'at',
  'kind',
  'amount_micros',
  'balance_after_micros',
  'request_id',
  'key_id',
  'model',
  'endpoint',
  ...CLASSES.map((c) => `${c}_tokens`),
  'reasoning_tokens',
  ...CLASSES.map((c) => `${c}_micros`),
  'tool_micros',
  'price_variants',
] as const;

/** The server tools' fees of a movement, summed (µUSD, six decimals); empty when no tool ran. */
function toolsMicros(m: StatementMovement): string {
  const tools = Object.entries(m.micros_by_class ?? {}).filter(([name]) => name.startsWith('tool:'));
  if (tools.length === 0) return '';
  const sum = tools.reduce((total, [, micros]) => total + BigInt(micros.split('.')[0]), 0n);
  return sum.toString() + '.000000';
}

/** One CSV line (RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled). */
export function csvLine(fields: (string | number | null | undefined)[]): string {
  return fields.map(csvField).join(',') + '\r\n';
}

export function movementCsv(m: StatementMovement): string {
  const tokens = CLASSES.map((c) => m.tokens?.[c]);
  const micros = CLASSES.map((c) => m.micros_by_class?.[c]);
  const variants = m.price_variants.length > 0 ? JSON.stringify(m.price_variants) : '';
  return csvLine(['movement', m.id, m.at, m.kind, m.amount_micros, m.balance_after_micros, m.request_id, m.key_id, m.model, m.endpoint, ...tokens, m.tokens?.reasoning, ...micros, toolsMicros(m), variants]);
}

/** The opening or closing balance as a CSV row: its µUSD in amount_micros and balance_after_micros. */
export function balanceCsv(row: 'opening_balance' | 'closing_balance', at: Date, micros: bigint): string {
  const blanks = CSV_COLUMNS.length - 6;
  return csvLine([row, '', at.toISOString(), '', micros.toString(), micros.toString(), ...new Array<string>(blanks).fill('')]);
}

function csvField(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  const text = String(value);
  // A leading =, +, - or @ would be read as a formula by spreadsheets (CSV injection): model names come from clients.
  const safe = /^[=+\-@\t\r]/.test(text) && !/^-?\d/.test(text) ? `'${text}` : text;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
