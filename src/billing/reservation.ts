import { CatalogEntry } from '../config/gateway-config.schema';
import { PriceOptions } from '../config/price-options';
import { BudgetLease } from './budget-lease';

/** The API key's budget: its spend is counted per key; with a limit, its holds go in a lease of the key's own. */
export interface KeyBudget {
  budgetId: string;
  limited: boolean;
}

export interface ReserveInput {
  accountId: string;
  requestId: string;
  key?: KeyBudget;
  model: CatalogEntry;
  /** An upper bound of the prompt's tokens. */
  promptTokens: number;
  /** The client's max_tokens / max_completion_tokens, or null when it set none. */
  requestedMaxTokens: number | null;
  /**
   * The least output limit the upstream takes (OpenAI's Responses API: 16), when above 1: with no limit set, an
   * allowance the credits would cut below it is declined as unaffordable (402), as a prompt they do not cover is.
   */
  minOutputTokens?: number;
  /** The field the client sets that output limit with in its dialect (max_tokens by default), for the 402's advice. */
  limitParam?: string;
  /** Choices asked for (n): each may produce the whole output allowance. */
  choices?: number;
  /** The price-changing options asked for (each priced by the model): the hold covers the dearest outcome. */
  priceOptions?: PriceOptions;
  /** The priced server tools offered, with their max_uses (null: the entry's tool_hold_uses): the hold covers their fees. */
  serverTools?: Record<string, number | null>;
  /** The request's tokens in its rate-limit windows (src/rate-limits/), settled with the hold. */
  tokens?: HeldTokens;
}

/** Tokens held in rate-limit windows at admission: trued up to what the request used (0 when it failed). */
export interface HeldTokens {
  settle(tokens: number): void;
}

/** The hold of one in-flight chat request: pass it back to settle or release. */
export interface Reservation {
  requestId: string;
  holdMicros: bigint;
  /** Output tokens covered by the hold: the client's own limit, or the capped model maximum. */
  outputAllowance: number;
  /** True when the client set no limit and the allowance was cut to what is affordable (send it upstream). */
  capped: boolean;
  readonly accountId: string;
  /** The key budget whose month spend counts the charge, if known. */
  readonly budgetId: string | null;
  /** The lease that holds it. */
  readonly lease: BudgetLease;
  /** Settled or released: a second call does nothing. */
  done: boolean;
  /** Its tokens in the rate-limit windows, trued up when it is settled or released. */
  readonly tokens?: HeldTokens;
}
